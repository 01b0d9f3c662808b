//! Rust client of the pioneer-grpc service (`pioneer.v1`).
//!
//! * [`v1`]: the generated messages and clients (committed under `src/gen`,
//!   regenerated with `make rust-proto`; no protoc or build script needed here).
//! * [`connect`] / [`connect_lazy`]: a [`Clients`] bundle with one client per
//!   service sharing one HTTP/2 channel, a bearer-token interceptor, a default
//!   per-call deadline and keepalive.
//! * [`helpers`]: role conversion, JSON schema to `Struct`, tool definitions, manifest refs.
//! * [`replies`]: a provider's response (Anthropic, OpenAI Chat and Responses, Gemini,
//!   Bedrock) as the entries to append, its usage and why the model stopped.
//! * [`status`]: `google.rpc` error details (`BadRequest` field violations)
//!   decoded from a [`tonic::Status`].
//!
//! ```no_run
//! use pioneer_grpc_client::{connect, v1, Options};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let mut clients = connect(
//!     "127.0.0.1:50051",
//!     Options { token: Some("secret".into()), ..Options::default() },
//! )
//! .await?;
//! let reply = clients
//!     .echo
//!     .echo(v1::EchoRequest { payload: b"ping".to_vec(), response_bytes: None })
//!     .await?;
//! assert_eq!(reply.into_inner().payload, b"ping");
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

mod client;
pub mod helpers;
pub mod replies;
mod reply_json;
pub mod status;

pub use client::{
    connect, connect_lazy, CallOptions, Channel, Clients, ConnectError, Options, Tls,
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_KEEPALIVE_INTERVAL, DEFAULT_KEEPALIVE_TIMEOUT,
    DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_TIMEOUT,
};

/// Generated protobuf messages and gRPC clients of the `pioneer.v1` package.
#[allow(missing_docs, clippy::all, clippy::pedantic, rustdoc::all)]
pub mod v1 {
    include!("gen/pioneer.v1.rs");
}

/// `google.api.FieldBehavior`, the annotation that marks the contract's required and output-only fields.
#[allow(missing_docs, clippy::all, clippy::pedantic, rustdoc::all)]
pub mod google_api {
    include!("gen/google.api.rs");
}

/// `grpc.health.v1` messages and client (from `tonic-health`).
pub mod health {
    pub use tonic_health::pb::health_check_response::ServingStatus;
    pub use tonic_health::pb::health_client::HealthClient;
    pub use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};
}

// The versions the stubs were built with, so callers need not name matching ones themselves.
pub use prost;
pub use prost_types;
pub use tonic;
pub use tonic_types;
