//! Which strings of a credential are secret besides the credential itself: the token of an
//! HTTP authorization value such as `Bearer <token>`, and the decoded parts of `Basic`.

/// The secret parts of `value` other than the whole value.
///
/// A value shaped like an HTTP authorization header value, `<scheme> <token>` (RFC 9110:
/// a scheme made of token characters, one or more spaces, then a single token without
/// whitespace), yields its token, whatever the scheme: `Bearer`, `Token`, `Bot`, `ApiKey`,
/// `DPoP` and vendor schemes alike. A program that receives the header often echoes only
/// the token. For `Basic` (in any case) it also yields the base64-decoded `user:password`
/// and the password after its first colon, when they decode to text.
pub(crate) fn parts(value: &str) -> Vec<String> {
    let Some((scheme, rest)) = value.split_once(' ') else {
        return Vec::new();
    };
    let token = rest.trim_start_matches(' ');
    if scheme.is_empty()
        || !scheme.bytes().all(is_token_char)
        || token.is_empty()
        || token.contains(char::is_whitespace)
    {
        return Vec::new();
    }
    let mut parts = vec![token.to_owned()];
    if scheme.eq_ignore_ascii_case("basic")
        && let Some(decoded) = base64(token).and_then(|bytes| String::from_utf8(bytes).ok())
    {
        if let Some((_, password)) = decoded.split_once(':') {
            parts.push(password.to_owned());
        }
        parts.push(decoded);
    }
    parts
}

/// RFC 9110 `tchar`: the characters an authentication scheme is made of.
fn is_token_char(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// Decodes standard base64 (RFC 4648 section 4), with or without padding, or `None` if
/// `text` is not base64.
fn base64(text: &str) -> Option<Vec<u8>> {
    let data = text.trim_end_matches('=');
    if text.len() - data.len() > 2 || data.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(data.len() * 3 / 4);
    let mut buffer = 0_u32;
    let mut bits = 0;
    for byte in data.bytes() {
        let value = match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        buffer = buffer << 6 | u32::from(value);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(value: &str, expected: &[&str]) {
        assert_eq!(parts(value), expected, "value: {value:?}");
    }

    #[test]
    fn scheme_and_token() {
        check("Bearer sk-0123456789", &["sk-0123456789"]);
        check("bearer  sk-0123456789", &["sk-0123456789"]);
        check("Bot MTIz.abc.def", &["MTIz.abc.def"]);
        check("ApiKey k-123", &["k-123"]);
        check("DPoP eyJhbGciOi", &["eyJhbGciOi"]);
    }

    #[test]
    fn other_shapes_have_no_parts() {
        check("sk-0123456789", &[]);
        check("Bearer", &[]);
        check("Bearer ", &[]);
        check(" Bearer x", &[]);
        check("Bearer two tokens", &[]);
        check("Bearer tab\there", &[]);
        check("not/a-scheme x", &[]);
    }

    #[test]
    fn basic_yields_user_password_and_password() {
        // "aladdin:opensesame"
        check(
            "Basic YWxhZGRpbjpvcGVuc2VzYW1l",
            &[
                "YWxhZGRpbjpvcGVuc2VzYW1l",
                "opensesame",
                "aladdin:opensesame",
            ],
        );
        // Unpadded, and lower-case scheme: "user:pw" then "u:p4ssw0rd!".
        check("basic dXNlcjpwdw", &["dXNlcjpwdw", "pw", "user:pw"]);
        check(
            "BASIC dTpwNHNzdzByZCE=",
            &["dTpwNHNzdzByZCE=", "p4ssw0rd!", "u:p4ssw0rd!"],
        );
        // Not base64, or not text: only the token.
        check("Basic not*base64", &["not*base64"]);
        check("Basic //79", &["//79"]);
    }

    #[test]
    fn base64_decodes_every_length() {
        for (text, expected) in [
            ("", ""),
            ("Zg==", "f"),
            ("Zm8=", "fo"),
            ("Zm9v", "foo"),
            ("Zm9vYg", "foob"),
            ("Zm9vYmE=", "fooba"),
            ("Zm9vYmFy", "foobar"),
        ] {
            assert_eq!(base64(text).as_deref(), Some(expected.as_bytes()), "{text}");
        }
        for text in ["Z", "Zg===", "Zm9v!", "Zm=9"] {
            assert_eq!(base64(text), None, "{text}");
        }
    }
}
