//! Reading a provider's response JSON: path-naming readers, [`ReplyError`], and canonical JSON.

use std::fmt;

use serde_json::{Map, Value};

/// The caller's mistake: an unknown provider or an empty turn id.
pub const INVALID_ARGUMENT: &str = "invalid_argument";
/// The response is not JSON text, or not a JSON object.
pub const NOT_JSON: &str = "not_json";
/// The provider's error body, or a response that failed.
pub const ERROR_BODY: &str = "error_body";
/// A field the reply needs is absent or null.
pub const MISSING: &str = "missing";
/// A field of another type than the API documents.
pub const WRONG_TYPE: &str = "wrong_type";
/// A content kind or state that no entry can hold.
pub const UNSUPPORTED: &str = "unsupported";
/// Tool call arguments that are not a JSON object.
pub const BAD_ARGUMENTS: &str = "bad_arguments";

const MAX_COUNT: f64 = i32::MAX as f64; // ProviderUsage's fields are int32

/// A response that cannot be turned into entries: its `code` (the constants of
/// this module, the same in every client) and the `path` in the response it names
/// (`choices[0].message.tool_calls[1].function.arguments`; empty for the whole).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyError {
    /// One of [`INVALID_ARGUMENT`], [`NOT_JSON`], [`ERROR_BODY`], [`MISSING`],
    /// [`WRONG_TYPE`], [`UNSUPPORTED`], [`BAD_ARGUMENTS`].
    pub code: &'static str,
    /// Where in the response.
    pub path: String,
    /// What is wrong there, for a person.
    pub message: String,
}

impl fmt::Display for ReplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for ReplyError {}

pub(crate) type Read<T> = Result<T, ReplyError>;

pub(crate) fn fail<T>(
    code: &'static str,
    path: impl Into<String>,
    message: impl Into<String>,
) -> Read<T> {
    Err(ReplyError {
        code,
        path: path.into(),
        message: message.into(),
    })
}

pub(crate) fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

pub(crate) fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

pub(crate) type Obj = Map<String, Value>;

pub(crate) fn as_response(value: &Value) -> Read<&Obj> {
    match value {
        Value::Object(body) => Ok(body),
        other => fail(
            NOT_JSON,
            "",
            format!("the response is a JSON {}, not an object", kind(other)),
        ),
    }
}

/// The value of `key`, `None` when absent or null.
pub(crate) fn get<'a>(body: Option<&'a Obj>, key: &str) -> Option<&'a Value> {
    body.and_then(|b| b.get(key)).filter(|v| !v.is_null())
}

fn required<'a>(body: &'a Obj, key: &str, path: &str) -> Read<&'a Value> {
    match get(Some(body), key) {
        Some(v) => Ok(v),
        None => fail(MISSING, child(path, key), "absent"),
    }
}

fn as_object(value: &Value, path: String) -> Read<&Obj> {
    match value {
        Value::Object(o) => Ok(o),
        other => fail(
            WRONG_TYPE,
            path,
            format!("an object was expected, not a {}", kind(other)),
        ),
    }
}

fn as_array(value: &Value, path: String) -> Read<&[Value]> {
    match value {
        Value::Array(a) => Ok(a),
        other => fail(
            WRONG_TYPE,
            path,
            format!("an array was expected, not a {}", kind(other)),
        ),
    }
}

pub(crate) fn as_text(value: &Value, path: String) -> Read<&str> {
    match value {
        Value::String(s) => Ok(s),
        other => fail(
            WRONG_TYPE,
            path,
            format!("a string was expected, not a {}", kind(other)),
        ),
    }
}

pub(crate) fn obj<'a>(body: &'a Obj, key: &str, path: &str) -> Read<&'a Obj> {
    as_object(required(body, key, path)?, child(path, key))
}

pub(crate) fn opt_obj<'a>(body: Option<&'a Obj>, key: &str, path: &str) -> Read<Option<&'a Obj>> {
    get(body, key)
        .map(|v| as_object(v, child(path, key)))
        .transpose()
}

pub(crate) fn array<'a>(body: &'a Obj, key: &str, path: &str) -> Read<&'a [Value]> {
    as_array(required(body, key, path)?, child(path, key))
}

/// The array, empty when absent or null.
pub(crate) fn opt_array<'a>(body: Option<&'a Obj>, key: &str, path: &str) -> Read<&'a [Value]> {
    Ok(get(body, key)
        .map(|v| as_array(v, child(path, key)))
        .transpose()?
        .unwrap_or(&[]))
}

pub(crate) fn text<'a>(body: &'a Obj, key: &str, path: &str) -> Read<&'a str> {
    as_text(required(body, key, path)?, child(path, key))
}

pub(crate) fn opt_text<'a>(body: Option<&'a Obj>, key: &str, path: &str) -> Read<Option<&'a str>> {
    get(body, key)
        .map(|v| as_text(v, child(path, key)))
        .transpose()
}

/// A required string that must not be empty (an id, a tool name, a type).
pub(crate) fn name<'a>(body: &'a Obj, key: &str, path: &str) -> Read<&'a str> {
    let value = text(body, key, path)?;
    if value.is_empty() {
        return fail(MISSING, child(path, key), "empty");
    }
    Ok(value)
}

pub(crate) fn item<'a>(items: &'a [Value], i: usize, path: &str) -> Read<&'a Obj> {
    as_object(&items[i], index(path, i))
}

/// A token count (a whole number from 0 to 2^31 - 1), `None` when absent.
pub(crate) fn count(body: Option<&Obj>, key: &str, path: &str) -> Read<Option<i32>> {
    let Some(value) = get(body, key) else {
        return Ok(None);
    };
    match value.as_f64() {
        Some(n) if n.fract() == 0.0 && (0.0..=MAX_COUNT).contains(&n) => Ok(Some(n as i32)),
        _ => fail(
            WRONG_TYPE,
            child(path, key),
            format!("a token count from 0 to {} was expected", i32::MAX),
        ),
    }
}

pub(crate) fn checked_sum(path: &str, counts: &[Option<i32>]) -> Read<i32> {
    let total: i64 = counts.iter().flatten().map(|c| i64::from(*c)).sum();
    match i32::try_from(total) {
        Ok(t) => Ok(t),
        Err(_) => fail(
            WRONG_TYPE,
            path,
            format!("the counts add up past {}", i32::MAX),
        ),
    }
}

/// Arguments given as JSON text: kept as they are, once known to be a JSON object ("" is none).
pub(crate) fn arguments_text(value: Option<&Value>, path: String) -> Read<String> {
    let Some(value) = value else {
        return fail(MISSING, path, "absent");
    };
    let text = as_text(value, path.clone())?;
    if !text.trim().is_empty() {
        match serde_json::from_str::<Value>(text) {
            Err(e) => {
                return fail(
                    BAD_ARGUMENTS,
                    path,
                    format!("the arguments are not JSON: {e}"),
                )
            }
            Ok(Value::Object(_)) => {}
            Ok(other) => {
                return fail(
                    BAD_ARGUMENTS,
                    path,
                    format!("the arguments are a JSON {}, not an object", kind(&other)),
                )
            }
        }
    }
    Ok(text.to_owned())
}

/// Arguments given as a JSON object, as canonical JSON text ([`canonical_json`]).
pub(crate) fn arguments_object(value: Option<&Value>, path: String) -> Read<String> {
    match value {
        None => fail(MISSING, path, "absent"),
        Some(v @ Value::Object(_)) => {
            let mut out = String::new();
            write_canonical(&mut out, v, &path)?;
            Ok(out)
        }
        Some(other) => fail(
            BAD_ARGUMENTS,
            path,
            format!("the arguments are a JSON {}, not an object", kind(other)),
        ),
    }
}

/// A JSON value as every pioneer-grpc client writes it (RFC 8785's form): no
/// spaces, keys sorted by UTF-16 code units, numbers as JavaScript writes doubles,
/// strings escaping only what JSON must. Tool call arguments a provider gives as
/// an object (Anthropic, Gemini, Bedrock) are written this way.
pub fn canonical_json(value: &Value) -> Result<String, ReplyError> {
    let mut out = String::new();
    write_canonical(&mut out, value, "")?;
    Ok(out)
}

fn write_canonical(out: &mut String, value: &Value, path: &str) -> Read<()> {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match n.as_f64() {
            Some(x) if x.is_finite() => out.push_str(&es_number(x)),
            _ => return fail(BAD_ARGUMENTS, path, "a number beyond a double's range"),
        },
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(out, item, &index(path, i))?;
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                write_canonical(out, &map[key.as_str()], &child(path, key))?;
            }
            out.push('}');
        }
    }
    Ok(())
}

/// The first key holding a value, in UTF-16 order (so every client names the same one).
pub(crate) fn first_key<'a>(block: &'a Obj, ignored: &[&str]) -> Option<&'a str> {
    block
        .iter()
        .filter(|(k, v)| !v.is_null() && !ignored.contains(&k.as_str()))
        .map(|(k, _)| k.as_str())
        .min_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()))
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// ECMAScript's Number::toString (what JSON.stringify writes) of a finite double.
fn es_number(x: f64) -> String {
    if x == 0.0 {
        return "0".to_owned();
    }
    let sign = if x < 0.0 { "-" } else { "" };
    // The shortest digits that read back as x, as d.ddde-x.
    let shortest = format!("{:e}", x.abs());
    let (mantissa, exp) = shortest.split_once('e').unwrap_or((&shortest, "0"));
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let e: i32 = exp.parse().unwrap_or(0);
    let digits = format!("{whole}{fraction}");
    let digits = digits.trim_end_matches('0');
    // x = 0.digits × 10^n (whole is one non-zero digit)
    let n = whole.len() as i32 + e;
    let k = digits.len() as i32;
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let exponent = n - 1;
        let exp_sign = if exponent > 0 { "+" } else { "-" };
        let mantissa = if k == 1 {
            digits.to_owned()
        } else {
            format!("{}.{}", &digits[..1], &digits[1..])
        };
        format!("{mantissa}e{exp_sign}{}", exponent.abs())
    };
    format!("{sign}{body}")
}
