//! Connecting to a pioneer-grpc server.

use std::fmt;
use std::time::Duration;

use tonic::metadata::AsciiMetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::service::Interceptor;
use tonic::transport::{self, Endpoint};
use tonic::{GrpcMethod, Request, Status};

use crate::health::HealthClient;
use crate::v1::echo_service_client::EchoServiceClient;
use crate::v1::history_service_client::HistoryServiceClient;
use crate::v1::manifest_service_client::ManifestServiceClient;
use crate::v1::prompt_compiler_service_client::PromptCompilerServiceClient;
use crate::v1::provider_service_client::ProviderServiceClient;
use crate::v1::turn_service_client::TurnServiceClient;

const AUTHORIZATION: &str = "authorization";

/// Default deadline of a unary call when [`Options::timeout`] is left at its default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest message sent or received: the server's default (16 MiB). tonic's own
/// decoding limit is 4 MiB, which fails on large appends and history loads.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// Default TCP (and TLS) connect timeout.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default interval of HTTP/2 keepalive pings while a call is open.
///
/// A gRPC C-core server (the Python server) answers pings that come more often
/// than its `grpc.http2.min_ping_interval_without_data_ms` (5 minutes by
/// default) with `GOAWAY too_many_pings` unless it sends data in between;
/// [`WatchManifests`](crate::v1::manifest_service_client::ManifestServiceClient::watch_manifests)
/// streams carry heartbeats, so one minute is safe there.
pub const DEFAULT_KEEPALIVE_INTERVAL: Duration = Duration::from_secs(60);
/// Default time to wait for a keepalive ping's answer before dropping the connection.
pub const DEFAULT_KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// TLS settings. Needs the crate feature `tls`.
#[derive(Clone, Debug, Default)]
pub struct Tls {
    /// PEM of the CA that signed the server certificate; the system roots when `None`.
    pub ca_pem: Option<Vec<u8>>,
    /// Name to verify the server certificate against; the address host when `None`.
    pub domain: Option<String>,
}

/// How to connect. Build with struct update syntax:
/// `Options { token: Some(t), ..Options::default() }`.
#[derive(Clone, Debug)]
pub struct Options {
    /// Bearer token sent as `authorization: Bearer <token>` on every call.
    pub token: Option<String>,
    /// Deadline of every unary call that does not set its own
    /// (`Request::set_timeout`). It is sent to the server as `grpc-timeout`, so
    /// the server stops working on an abandoned call, and enforced locally.
    /// Not applied to the `WatchManifests` stream, which lives until dropped.
    /// `None` = no default deadline.
    pub timeout: Option<Duration>,
    /// TLS to the server (`https://`); plaintext HTTP/2 when `None`.
    pub tls: Option<Tls>,
    /// TCP (and TLS) connect timeout.
    pub connect_timeout: Duration,
    /// HTTP/2 keepalive ping interval while calls are open; `None` = no pings.
    pub keepalive_interval: Option<Duration>,
    /// How long to wait for a ping's answer before the connection is dropped.
    pub keepalive_timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            token: None,
            timeout: Some(DEFAULT_TIMEOUT),
            tls: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            keepalive_interval: Some(DEFAULT_KEEPALIVE_INTERVAL),
            keepalive_timeout: DEFAULT_KEEPALIVE_TIMEOUT,
        }
    }
}

/// Why [`connect`] failed.
#[derive(Debug)]
pub enum ConnectError {
    /// The address is not `host:port` or a valid `http(s)://` URI.
    InvalidAddress(String),
    /// The token cannot travel in an HTTP header (control characters, non-ASCII).
    InvalidToken,
    /// [`Options::tls`] was set but the crate was built without feature `tls`,
    /// or `http://` was combined with TLS.
    Tls(String),
    /// Connecting failed.
    Transport(transport::Error),
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidAddress(addr) => write!(f, "invalid server address {addr:?}"),
            Self::InvalidToken => f.write_str("token is not a valid HTTP header value"),
            Self::Tls(why) => write!(f, "tls: {why}"),
            Self::Transport(err) => {
                write!(
                    f,
                    "cannot reach a pioneer-grpc server (is it running, and is the address right?): {err}"
                )?;
                // tonic's own text is only "transport error": add the causes.
                let mut last = err.to_string();
                let mut cause = std::error::Error::source(err);
                while let Some(inner) = cause {
                    let text = inner.to_string();
                    if text != last {
                        write!(f, ": {text}")?;
                    }
                    last = text;
                    cause = inner.source();
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for ConnectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Transport(err) => Some(err),
            _ => None,
        }
    }
}

/// Interceptor that adds the bearer token and the default deadline to each call.
#[derive(Clone, Debug, Default)]
pub struct CallOptions {
    authorization: Option<AsciiMetadataValue>,
    timeout: Option<Duration>,
}

impl CallOptions {
    /// Builds the interceptor for `token` (sent as `Bearer <token>`) and a default deadline.
    pub fn new(token: Option<&str>, timeout: Option<Duration>) -> Result<Self, ConnectError> {
        let authorization = token
            .map(|t| {
                AsciiMetadataValue::try_from(format!("Bearer {t}"))
                    .map_err(|_| ConnectError::InvalidToken)
            })
            .transpose()?;
        Ok(Self {
            authorization,
            timeout,
        })
    }
}

/// Methods that stream for as long as the caller wants: no default deadline.
fn is_open_ended(method: Option<&GrpcMethod<'_>>) -> bool {
    method.is_some_and(|m| {
        m.service() == "pioneer.v1.ManifestService" && m.method() == "WatchManifests"
    })
}

impl Interceptor for CallOptions {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(value) = &self.authorization {
            if !request.metadata().contains_key(AUTHORIZATION) {
                request.metadata_mut().insert(AUTHORIZATION, value.clone());
            }
        }
        if let Some(timeout) = self.timeout {
            let has_deadline = request.metadata().contains_key("grpc-timeout");
            if !has_deadline && !is_open_ended(request.extensions().get::<GrpcMethod<'_>>()) {
                request.set_timeout(timeout);
            }
        }
        Ok(request)
    }
}

/// The channel every client of a [`Clients`] bundle shares: one HTTP/2
/// connection, with the [`CallOptions`] interceptor in front.
pub type Channel = InterceptedService<transport::Channel, CallOptions>;

/// One client per service of the server, all on one connection. Cheap to
/// clone; clone it (or a single client) per task.
#[derive(Clone, Debug)]
pub struct Clients {
    /// `pioneer.v1.PromptCompilerService`.
    pub prompt_compiler: PromptCompilerServiceClient<Channel>,
    /// `pioneer.v1.HistoryService`.
    pub history: HistoryServiceClient<Channel>,
    /// `pioneer.v1.ManifestService`.
    pub manifest: ManifestServiceClient<Channel>,
    /// `pioneer.v1.ProviderService`.
    pub provider: ProviderServiceClient<Channel>,
    /// `pioneer.v1.TurnService`.
    pub turn: TurnServiceClient<Channel>,
    /// `pioneer.v1.EchoService`.
    pub echo: EchoServiceClient<Channel>,
    /// `grpc.health.v1.Health`.
    pub health: HealthClient<Channel>,
    channel: Channel,
}

impl Clients {
    /// Builds the bundle on an existing channel (e.g. one with custom tower layers).
    pub fn from_channel(channel: transport::Channel, call_options: CallOptions) -> Self {
        let channel = InterceptedService::new(channel, call_options);
        Self {
            prompt_compiler: PromptCompilerServiceClient::new(channel.clone())
                .max_decoding_message_size(DEFAULT_MAX_MESSAGE_BYTES)
                .max_encoding_message_size(DEFAULT_MAX_MESSAGE_BYTES),
            history: HistoryServiceClient::new(channel.clone())
                .max_decoding_message_size(DEFAULT_MAX_MESSAGE_BYTES)
                .max_encoding_message_size(DEFAULT_MAX_MESSAGE_BYTES),
            manifest: ManifestServiceClient::new(channel.clone())
                .max_decoding_message_size(DEFAULT_MAX_MESSAGE_BYTES)
                .max_encoding_message_size(DEFAULT_MAX_MESSAGE_BYTES),
            provider: ProviderServiceClient::new(channel.clone())
                .max_decoding_message_size(DEFAULT_MAX_MESSAGE_BYTES)
                .max_encoding_message_size(DEFAULT_MAX_MESSAGE_BYTES),
            turn: TurnServiceClient::new(channel.clone())
                .max_decoding_message_size(DEFAULT_MAX_MESSAGE_BYTES)
                .max_encoding_message_size(DEFAULT_MAX_MESSAGE_BYTES),
            echo: EchoServiceClient::new(channel.clone())
                .max_decoding_message_size(DEFAULT_MAX_MESSAGE_BYTES)
                .max_encoding_message_size(DEFAULT_MAX_MESSAGE_BYTES),
            health: HealthClient::new(channel.clone()),
            channel,
        }
    }

    /// The shared channel, for clients of other services on the same server.
    pub fn channel(&self) -> Channel {
        self.channel.clone()
    }
}

/// Connects to `addr` (`host:port`, or an `http://` / `https://` URI) and
/// returns a client for every service. Fails when the server cannot be reached.
pub async fn connect(addr: impl AsRef<str>, options: Options) -> Result<Clients, ConnectError> {
    let (endpoint, call_options) = endpoint(addr.as_ref(), &options)?;
    let channel = endpoint.connect().await.map_err(ConnectError::Transport)?;
    Ok(Clients::from_channel(channel, call_options))
}

/// Like [`connect`], but connects on the first call (and reconnects after a
/// connection loss), so it does not fail when the server is not up yet.
pub fn connect_lazy(addr: impl AsRef<str>, options: Options) -> Result<Clients, ConnectError> {
    let (endpoint, call_options) = endpoint(addr.as_ref(), &options)?;
    Ok(Clients::from_channel(endpoint.connect_lazy(), call_options))
}

fn endpoint(addr: &str, options: &Options) -> Result<(Endpoint, CallOptions), ConnectError> {
    let addr = addr.trim();
    let uri = if addr.contains("://") {
        addr.to_owned()
    } else if options.tls.is_some() {
        format!("https://{addr}")
    } else {
        format!("http://{addr}")
    };
    let mut endpoint = Endpoint::from_shared(uri.clone())
        .map_err(|_| ConnectError::InvalidAddress(addr.to_owned()))?;
    if endpoint.uri().host().is_none() {
        return Err(ConnectError::InvalidAddress(addr.to_owned()));
    }
    endpoint = endpoint
        .connect_timeout(options.connect_timeout)
        .tcp_nodelay(true)
        .keep_alive_timeout(options.keepalive_timeout)
        .keep_alive_while_idle(false);
    if let Some(interval) = options.keepalive_interval {
        endpoint = endpoint.http2_keep_alive_interval(interval);
    }
    if let Some(tls) = &options.tls {
        if uri.starts_with("http://") {
            return Err(ConnectError::Tls(format!("{addr} is plaintext http://")));
        }
        endpoint = with_tls(endpoint, tls)?;
    }
    let call_options = CallOptions::new(options.token.as_deref(), options.timeout)?;
    Ok((endpoint, call_options))
}

#[cfg(feature = "tls")]
fn with_tls(endpoint: Endpoint, tls: &Tls) -> Result<Endpoint, ConnectError> {
    use tonic::transport::{Certificate, ClientTlsConfig};
    let mut config = ClientTlsConfig::new();
    config = match &tls.ca_pem {
        Some(pem) => config.ca_certificate(Certificate::from_pem(pem)),
        None => config.with_native_roots(),
    };
    if let Some(domain) = &tls.domain {
        config = config.domain_name(domain.clone());
    }
    endpoint
        .tls_config(config)
        .map_err(|e| ConnectError::Tls(e.to_string()))
}

#[cfg(not(feature = "tls"))]
fn with_tls(_endpoint: Endpoint, _tls: &Tls) -> Result<Endpoint, ConnectError> {
    Err(ConnectError::Tls(
        "pioneer-grpc-client was built without the `tls` feature".to_owned(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_port_becomes_http_uri() {
        let (endpoint, _) = endpoint("127.0.0.1:50051", &Options::default()).unwrap();
        assert_eq!(endpoint.uri().to_string(), "http://127.0.0.1:50051/");
    }

    #[test]
    fn bad_address_and_token_are_rejected() {
        assert!(matches!(
            endpoint("", &Options::default()),
            Err(ConnectError::InvalidAddress(_))
        ));
        let options = Options {
            token: Some("line\nbreak".into()),
            ..Options::default()
        };
        assert!(matches!(
            endpoint("localhost:1", &options),
            Err(ConnectError::InvalidToken)
        ));
    }

    #[test]
    fn interceptor_adds_token_and_deadline_but_keeps_callers_own() {
        let mut options = CallOptions::new(Some("s3cret"), Some(Duration::from_secs(5))).unwrap();
        let request = options.call(Request::new(())).unwrap();
        assert_eq!(
            request.metadata().get("authorization").unwrap(),
            "Bearer s3cret"
        );
        let default_deadline = request.metadata().get("grpc-timeout").unwrap().clone();

        let mut own = Request::new(());
        own.set_timeout(Duration::from_millis(7));
        let own_deadline = own.metadata().get("grpc-timeout").unwrap().clone();
        assert_ne!(own_deadline, default_deadline);
        own.metadata_mut()
            .insert("authorization", "Bearer other".parse().unwrap());
        let request = options.call(own).unwrap();
        assert_eq!(
            request.metadata().get("authorization").unwrap(),
            "Bearer other"
        );
        assert_eq!(
            request.metadata().get("grpc-timeout").unwrap(),
            own_deadline
        );
    }

    #[test]
    fn watch_stream_gets_no_default_deadline() {
        let mut options = CallOptions::new(None, Some(Duration::from_secs(5))).unwrap();
        let mut request = Request::new(());
        request.extensions_mut().insert(GrpcMethod::new(
            "pioneer.v1.ManifestService",
            "WatchManifests",
        ));
        let request = options.call(request).unwrap();
        assert!(request.metadata().get("grpc-timeout").is_none());
        assert!(request.metadata().get("authorization").is_none());
    }
}
