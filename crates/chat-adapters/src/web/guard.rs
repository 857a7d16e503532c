//! The checks every console request passes before anything else reads it: a loopback
//! `Host` (against DNS rebinding), a same-origin request (against cross-site requests), the
//! access token, and for the API a JSON body of bounded size.

use http::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, COOKIE, HOST, ORIGIN};
use http::{HeaderMap, Method, StatusCode};

use super::token::AccessToken;

/// A refused request: its status and a message safe to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) status: StatusCode,
    pub(crate) message: &'static str,
}

impl Refusal {
    pub(crate) const fn new(status: StatusCode, message: &'static str) -> Self {
        Self { status, message }
    }
}

/// The name of the console's cookie on this port (cookies are shared by every port of a
/// host, so two consoles on one machine keep theirs apart).
pub(crate) fn cookie_name(port: u16) -> String {
    format!("yetibot_console_{port}")
}

/// Whether `host` (a `Host` header or an origin's authority) names this machine's loopback
/// interface on `port`: `127.0.0.1`, `localhost` or `[::1]`, with the port when given.
pub(crate) fn is_loopback_authority(authority: &str, port: u16) -> bool {
    let authority = authority.trim().to_ascii_lowercase();
    let (host, given_port) = if let Some(rest) = authority.strip_prefix('[') {
        match rest.split_once(']') {
            Some((inner, tail)) => (format!("[{inner}]"), tail.strip_prefix(':')),
            None => return false,
        }
    } else {
        match authority.split_once(':') {
            Some((host, port)) => (host.to_owned(), Some(port)),
            None => (authority.clone(), None),
        }
    };
    // A name must be localhost (a DNS name could be rebound to this machine); an address
    // literal must be a loopback one (any of 127.0.0.0/8, or ::1).
    let literal = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = host == "localhost"
        || literal
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    let port_ok = match given_port {
        None => port == 80,
        Some(text) => text.parse::<u16>().ok() == Some(port),
    };
    loopback && port_ok
}

/// The checks that do not depend on the route: host, origin, fetch site, then the token
/// (from the cookie or an `Authorization: Bearer` header). `bootstrap` is the token of a
/// `?token=` query on the page itself.
pub(crate) fn check(
    headers: &HeaderMap,
    token: &AccessToken,
    port: u16,
    bootstrap: Option<&str>,
) -> Result<(), Refusal> {
    let host = headers
        .get(HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if !is_loopback_authority(host, port) {
        return Err(Refusal::new(
            StatusCode::FORBIDDEN,
            "the console answers only to localhost or a loopback address on its own port",
        ));
    }
    if let Some(origin) = headers.get(ORIGIN) {
        let same = origin
            .to_str()
            .ok()
            .and_then(|o| o.strip_prefix("http://"))
            .is_some_and(|authority| authority.eq_ignore_ascii_case(host));
        if !same {
            return Err(Refusal::new(
                StatusCode::FORBIDDEN,
                "cross-origin requests are refused",
            ));
        }
    }
    if let Some(site) = headers.get("sec-fetch-site") {
        let allowed = site
            .to_str()
            .is_ok_and(|s| s.eq_ignore_ascii_case("same-origin") || s.eq_ignore_ascii_case("none"));
        if !allowed {
            return Err(Refusal::new(
                StatusCode::FORBIDDEN,
                "cross-site requests are refused",
            ));
        }
    }
    let presented = bootstrap
        .map(str::to_owned)
        .or_else(|| cookie(headers, &cookie_name(port)))
        .or_else(|| bearer(headers));
    match presented {
        Some(candidate) if token.matches(&candidate) => Ok(()),
        _ => Err(Refusal::new(
            StatusCode::UNAUTHORIZED,
            "open the console through the URL the bot printed when it started",
        )),
    }
}

/// The API's body rules for methods that carry one: JSON, and not over `max_bytes` by its
/// declared length (the reader enforces the bound again while reading).
pub(crate) fn check_body(
    method: &Method,
    headers: &HeaderMap,
    max_bytes: usize,
) -> Result<(), Refusal> {
    if *method != Method::POST {
        return Ok(());
    }
    let json = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return Err(Refusal::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "the API takes Content-Type: application/json",
        ));
    }
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > max_bytes as u64) {
        return Err(too_large());
    }
    Ok(())
}

pub(crate) fn too_large() -> Refusal {
    Refusal::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "request bodies are limited to 1 MiB",
    )
}

fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.to_owned())
}

fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, value.parse().expect("header value"));
        }
        map
    }

    fn token() -> AccessToken {
        AccessToken::new(&"t".repeat(40)).expect("token")
    }

    #[test]
    fn loopback_names_on_the_right_port_only() {
        for ok in [
            "127.0.0.1:3003",
            "localhost:3003",
            "LOCALHOST:3003",
            "[::1]:3003",
        ] {
            assert!(is_loopback_authority(ok, 3003), "{ok}");
        }
        for bad in [
            "127.0.0.1:3004",
            "evil.test:3003",
            "127.0.0.1.evil.test:3003",
            "10.0.0.1:3003",
            "[::ffff:10.0.0.1]:3003",
            "localhost.:3003",
            "[::1",
            "",
            "localhost",
            "0.0.0.0:3003",
        ] {
            assert!(!is_loopback_authority(bad, 3003), "{bad}");
        }
        assert!(is_loopback_authority("localhost", 80));
    }

    #[test]
    fn the_order_of_refusals() {
        let good = format!("yetibot_console_3003={}", "t".repeat(40));
        let status = |pairs: &[(&'static str, &str)]| {
            check(&headers(pairs), &token(), 3003, None).map_err(|r| r.status.as_u16())
        };
        assert_eq!(
            status(&[("host", "127.0.0.1:3003"), ("cookie", &good)]),
            Ok(())
        );
        assert_eq!(
            status(&[("host", "evil.test:3003"), ("cookie", &good)]),
            Err(403)
        );
        assert_eq!(status(&[("cookie", &good)]), Err(403));
        assert_eq!(status(&[("host", "127.0.0.1:3003")]), Err(401));
        assert_eq!(
            status(&[
                ("host", "127.0.0.1:3003"),
                ("cookie", "yetibot_console_3003=wrong")
            ]),
            Err(401)
        );
        assert_eq!(
            status(&[
                ("host", "127.0.0.1:3003"),
                ("cookie", &good),
                ("origin", "null")
            ]),
            Err(403)
        );
        assert_eq!(
            status(&[
                ("host", "127.0.0.1:3003"),
                ("cookie", &good),
                ("origin", "http://evil.test")
            ]),
            Err(403)
        );
        assert_eq!(
            status(&[
                ("host", "127.0.0.1:3003"),
                ("cookie", &good),
                ("origin", "http://127.0.0.1:3003")
            ]),
            Ok(())
        );
        assert_eq!(
            status(&[
                ("host", "127.0.0.1:3003"),
                ("cookie", &good),
                ("sec-fetch-site", "cross-site")
            ]),
            Err(403)
        );
        assert_eq!(
            status(&[
                ("host", "127.0.0.1:3003"),
                ("cookie", &good),
                ("sec-fetch-site", "same-site")
            ]),
            Err(403)
        );
        let bearer = format!("Bearer {}", "t".repeat(40));
        assert_eq!(
            status(&[("host", "localhost:3003"), ("authorization", &bearer)]),
            Ok(())
        );
        assert_eq!(
            check(
                &headers(&[("host", "127.0.0.1:3003")]),
                &token(),
                3003,
                Some(&"t".repeat(40))
            ),
            Ok(())
        );
    }

    #[test]
    fn api_bodies_are_json_and_bounded() {
        let post = Method::POST;
        let code = |pairs: &[(&'static str, &str)]| {
            check_body(&post, &headers(pairs), 1 << 20).map_err(|r| r.status.as_u16())
        };
        assert_eq!(code(&[("content-type", "application/json")]), Ok(()));
        assert_eq!(
            code(&[("content-type", "application/json; charset=utf-8")]),
            Ok(())
        );
        assert_eq!(code(&[]), Err(415));
        assert_eq!(code(&[("content-type", "text/plain")]), Err(415));
        assert_eq!(
            code(&[
                ("content-type", "application/json"),
                ("content-length", "1048577")
            ]),
            Err(413)
        );
        assert_eq!(check_body(&Method::GET, &headers(&[]), 1), Ok(()));
    }
}
