//! The checks on an image URL's text, all made before any network I/O, and the search for
//! image URLs in chat text.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use http::HeaderValue;
use http::uri::PathAndQuery;
use rustls::pki_types::ServerName;
use url::{Position, Url};

use crate::address::classify;
use crate::error::UrlError;
use crate::limits::MAX_URL_CHARS;

/// An image URL that passed every check that needs no network: public HTTPS on the
/// standard port, a host, no user name or password, no fragment, at most
/// [`MAX_URL_CHARS`] characters, and, when the host is an IP address, a public one.
///
/// Its `Debug` shows only the host: a path or query can carry a token.
#[derive(Clone)]
pub struct ImageUrl {
    url: Url,
    host: Host,
    server_name: ServerName<'static>,
    host_header: HeaderValue,
    target: PathAndQuery,
}

/// Where an image URL points: a name still to resolve, or an address already checked.
#[derive(Debug, Clone)]
pub(crate) enum Host {
    Domain(String),
    Ip(IpAddr),
}

impl ImageUrl {
    /// Checks `text` as an image URL.
    ///
    /// Legacy IPv4 spellings are read the way browsers read them (`https://0x7f.1/`,
    /// `https://2130706433/` and `https://017700000001/` are all `127.0.0.1`) and refused
    /// like the dotted form.
    ///
    /// # Errors
    ///
    /// The first check `text` fails, as a [`UrlError`].
    ///
    /// ```
    /// use yetibot_image_fetch::{AddressClass, ImageUrl, UrlError};
    ///
    /// let url = ImageUrl::parse("https://images.example/cat.png?size=large")?;
    /// assert_eq!(url.host(), "images.example");
    /// assert_eq!(
    ///     ImageUrl::parse("https://0x7f.1/cat.png").err(),
    ///     Some(UrlError::ForbiddenAddress { class: AddressClass::Loopback })
    /// );
    /// assert_eq!(
    ///     ImageUrl::parse("https://images.example:8443/cat.png").err(),
    ///     Some(UrlError::Port { port: 8443 })
    /// );
    /// # Ok::<(), UrlError>(())
    /// ```
    pub fn parse(text: &str) -> Result<Self, UrlError> {
        let chars = text.chars().count();
        if chars > MAX_URL_CHARS {
            return Err(UrlError::TooLong { chars });
        }
        let url = Url::parse(text).map_err(|error| {
            if !says_https(text) {
                UrlError::NotHttps
            } else if error == url::ParseError::EmptyHost {
                UrlError::NoHost
            } else {
                malformed(error)
            }
        })?;
        if url.scheme() != "https" {
            return Err(UrlError::NotHttps);
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(UrlError::Credentials);
        }
        if url.fragment().is_some() {
            return Err(UrlError::Fragment);
        }
        // `Url` forgets a port that is the scheme's default, so `:443` is not seen here.
        if let Some(port) = url.port() {
            return Err(UrlError::Port { port });
        }
        let (host, server_name) = match url.host() {
            None => return Err(UrlError::NoHost),
            Some(url::Host::Domain(domain)) => {
                let name = ServerName::try_from(domain.to_owned()).map_err(malformed)?;
                (Host::Domain(domain.to_owned()), name)
            }
            Some(url::Host::Ipv4(v4)) => (Host::Ip(v4.into()), ServerName::from(IpAddr::from(v4))),
            Some(url::Host::Ipv6(v6)) => (Host::Ip(v6.into()), ServerName::from(IpAddr::from(v6))),
        };
        if let Host::Ip(address) = host {
            classify(address).map_err(|class| UrlError::ForbiddenAddress { class })?;
        }
        let host_header =
            HeaderValue::from_str(url.host_str().unwrap_or_default()).map_err(malformed)?;
        let target = PathAndQuery::from_str(&url[Position::BeforePath..Position::AfterQuery])
            .map_err(malformed)?;
        Ok(Self {
            url,
            host,
            server_name,
            host_header,
            target,
        })
    }

    /// The host as the URL names it: a lower-case domain name, an IPv4 address, or an IPv6
    /// address in brackets.
    pub fn host(&self) -> &str {
        self.url.host_str().unwrap_or_default()
    }

    /// The whole URL, normalised. It may carry a token in its path or query: keep it out of
    /// logs and replies.
    pub fn as_str(&self) -> &str {
        self.url.as_str()
    }

    pub(crate) fn host_kind(&self) -> &Host {
        &self.host
    }

    pub(crate) fn server_name(&self) -> &ServerName<'static> {
        &self.server_name
    }

    pub(crate) fn host_header(&self) -> &HeaderValue {
        &self.host_header
    }

    pub(crate) fn target(&self) -> &PathAndQuery {
        &self.target
    }
}

impl FromStr for ImageUrl {
    type Err = UrlError;

    fn from_str(text: &str) -> Result<Self, UrlError> {
        Self::parse(text)
    }
}

impl fmt::Debug for ImageUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ImageUrl")
            .field("host", &self.host())
            .finish_non_exhaustive()
    }
}

/// The whitespace-separated `https://` and `http://` words of `text` whose path ends in
/// `.png`, `.jpg`, `.jpeg` or `.webp` (in any case; a query may follow), in order.
///
/// This only finds candidates; each still goes through [`ImageUrl::parse`], which refuses
/// plain `http` with its own error, so a user who wrote one hears why rather than having it
/// read as text.
///
/// ```
/// use yetibot_image_fetch::image_urls_in;
///
/// let text = "count the cats https://a.example/cats.JPG?w=800 and https://a.example/page.html";
/// assert_eq!(image_urls_in(text), ["https://a.example/cats.JPG?w=800"]);
/// assert_eq!(image_urls_in("see http://a.example/x.png"), ["http://a.example/x.png"]);
/// ```
pub fn image_urls_in(text: &str) -> Vec<&str> {
    text.split_whitespace()
        .filter(|word| names_an_image(word))
        .collect()
}

const IMAGE_EXTENSIONS: [&str; 4] = [".png", ".jpg", ".jpeg", ".webp"];

fn names_an_image(word: &str) -> bool {
    let Some(rest) = strip_prefix_ignore_case(word, "https://")
        .or_else(|| strip_prefix_ignore_case(word, "http://"))
    else {
        return false;
    };
    // The authority ends at the first `/`, `?` or `#`; only a `/` starts a path.
    let Some(start) = rest.find(['/', '?', '#']) else {
        return false;
    };
    let Some(after_authority) = rest.get(start..).filter(|r| r.starts_with('/')) else {
        return false;
    };
    let path = after_authority.split(['?', '#']).next().unwrap_or_default();
    IMAGE_EXTENSIONS.iter().any(|extension| {
        path.len()
            .checked_sub(extension.len())
            .and_then(|at| path.as_bytes().get(at..))
            .is_some_and(|end| end.eq_ignore_ascii_case(extension.as_bytes()))
    })
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    text.get(prefix.len()..)
        .filter(|_| head.eq_ignore_ascii_case(prefix))
}

/// Whether the text begins with the `https:` scheme, after the leading spaces and control
/// characters a URL parser skips.
fn says_https(text: &str) -> bool {
    strip_prefix_ignore_case(text.trim_start_matches(|c: char| c <= ' '), "https:").is_some()
}

fn malformed(error: impl fmt::Display) -> UrlError {
    UrlError::Malformed {
        reason: error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AddressClass;

    fn check(text: &str, expected: Result<&str, UrlError>) {
        let result = ImageUrl::parse(text).map(|url| url.host().to_owned());
        assert_eq!(result.as_deref().map_err(Clone::clone), expected, "{text}");
    }

    fn refused(text: &str, error: UrlError) {
        check(text, Err(error));
    }

    fn forbidden(text: &str, class: AddressClass) {
        refused(text, UrlError::ForbiddenAddress { class });
    }

    #[test]
    fn public_https_urls_pass() {
        check("https://images.example/cat.png", Ok("images.example"));
        check("HTTPS://Images.EXAMPLE/cat.png", Ok("images.example"));
        check("https://images.example:443/cat.png", Ok("images.example"));
        check("https://images.example", Ok("images.example"));
        check("https://93.184.216.34/a.png", Ok("93.184.216.34"));
        check("https://[2606:4700::1111]/a.png", Ok("[2606:4700::1111]"));
        check(
            "https://[::ffff:93.184.216.34]/a.png",
            Ok("[::ffff:5db8:d822]"),
        );
        check("https://bücher.example/a.png", Ok("xn--bcher-kva.example"));
        check(
            "  https://images.example/a b.png?x=1&y=2  ",
            Ok("images.example"),
        );
    }

    #[test]
    fn the_target_is_the_path_and_query() {
        let url = ImageUrl::parse("https://images.example/a b/c.png?x=1&y=%20").expect("valid");
        assert_eq!(url.target().as_str(), "/a%20b/c.png?x=1&y=%20");
        assert_eq!(url.host_header(), "images.example");
        let root = ImageUrl::parse("https://images.example").expect("valid");
        assert_eq!(root.target().as_str(), "/");
        assert!(matches!(root.host_kind(), Host::Domain(d) if d == "images.example"));
    }

    #[test]
    fn length_is_counted_in_characters() {
        let prefix = "https://images.example/";
        let fits = format!("{prefix}{}", "é".repeat(MAX_URL_CHARS - prefix.len()));
        assert!(fits.len() > MAX_URL_CHARS);
        check(&fits, Ok("images.example"));
        let long = format!("{fits}x");
        refused(
            &long,
            UrlError::TooLong {
                chars: MAX_URL_CHARS + 1,
            },
        );
    }

    #[test]
    fn only_https_is_accepted() {
        refused("http://images.example/a.png", UrlError::NotHttps);
        refused("ftp://images.example/a.png", UrlError::NotHttps);
        refused("file:///etc/passwd", UrlError::NotHttps);
        refused("data:image/png;base64,AAAA", UrlError::NotHttps);
        refused("javascript:alert(1)", UrlError::NotHttps);
        refused("//images.example/a.png", UrlError::NotHttps);
        refused("images.example/a.png", UrlError::NotHttps);
        refused("", UrlError::NotHttps);
    }

    #[test]
    fn a_host_is_required() {
        refused("https://", UrlError::NoHost);
        // Browsers skip extra slashes after a special scheme: this is host `a.png`.
        check("https:///a.png", Ok("a.png"));
        refused("https://:443/a.png", UrlError::NoHost);
        refused("https://?x", UrlError::NoHost);
    }

    #[test]
    fn credentials_fragments_and_ports_are_refused() {
        refused("https://user@images.example/a.png", UrlError::Credentials);
        refused(
            "https://user:pw@images.example/a.png",
            UrlError::Credentials,
        );
        refused("https://:pw@images.example/a.png", UrlError::Credentials);
        refused("https://images.example/a.png#top", UrlError::Fragment);
        refused("https://images.example/a.png#", UrlError::Fragment);
        refused(
            "https://images.example:8443/a.png",
            UrlError::Port { port: 8443 },
        );
        refused(
            "https://images.example:80/a.png",
            UrlError::Port { port: 80 },
        );
        refused("https://images.example:0/a.png", UrlError::Port { port: 0 });
        refused(
            "https://images.example:65536/a.png",
            UrlError::Malformed {
                reason: "invalid port number".into(),
            },
        );
    }

    #[test]
    fn ip_literal_hosts_are_classified_at_once() {
        forbidden("https://127.0.0.1/a.png", AddressClass::Loopback);
        forbidden("https://10.0.0.1/a.png", AddressClass::Private);
        forbidden(
            "https://169.254.169.254/latest/meta-data",
            AddressClass::LinkLocal,
        );
        forbidden("https://0.0.0.0/a.png", AddressClass::Unspecified);
        forbidden("https://[::1]/a.png", AddressClass::Loopback);
        forbidden("https://[::]/a.png", AddressClass::Unspecified);
        forbidden("https://[::ffff:127.0.0.1]/a.png", AddressClass::Loopback);
        forbidden("https://[::ffff:7f00:1]/a.png", AddressClass::Loopback);
        forbidden("https://[fe80::1]/a.png", AddressClass::LinkLocal);
        forbidden("https://[fd00::1]/a.png", AddressClass::UniqueLocal);
        forbidden("https://[64:ff9b::a00:1]/a.png", AddressClass::Private);
        forbidden("https://[2002:a9fe:a9fe::]/a.png", AddressClass::LinkLocal);
        refused(
            "https://[fe80::1%25eth0]/a.png",
            UrlError::Malformed {
                reason: "invalid IPv6 address".into(),
            },
        );
    }

    #[test]
    fn legacy_ipv4_spellings_are_read_as_browsers_do() {
        forbidden("https://0x7f.1/a.png", AddressClass::Loopback);
        forbidden("https://0x7f000001/a.png", AddressClass::Loopback);
        forbidden("https://2130706433/a.png", AddressClass::Loopback);
        forbidden("https://017700000001/a.png", AddressClass::Loopback);
        forbidden("https://0177.0.0.1/a.png", AddressClass::Loopback);
        forbidden("https://127.1/a.png", AddressClass::Loopback);
        forbidden("https://127.0.0.1./a.png", AddressClass::Loopback);
        forbidden("https://0/a.png", AddressClass::Unspecified);
        forbidden("https://0xa9.0xfe.0xa9.0xfe/a.png", AddressClass::LinkLocal);
        forbidden("https://167772161/a.png", AddressClass::Private);
        forbidden("https://%31%32%37.0.0.1/a.png", AddressClass::Loopback);
        forbidden("https://１２７.０.０.１/a.png", AddressClass::Loopback);
    }

    #[test]
    fn debug_shows_only_the_host() {
        let url = ImageUrl::parse("https://files.example/private.png?token=abc123").expect("valid");
        let printed = format!("{url:?}");
        assert_eq!(printed, r#"ImageUrl { host: "files.example", .. }"#);
    }

    #[test]
    fn image_urls_are_found_between_spaces() {
        let text = "look https://a.example/x.png\nhttps://a.example/y.JPEG?size=2 \
                    http://a.example/z.png https://a.example/z.gif https://a.example/page \
                    https://a.example/w.webp#frag HTTPS://A.EXAMPLE/V.WebP (https://a.example/q.png) \
                    https://a.example?x.png https://a.example/.jpg x https://é.example/ü.jpg";
        assert_eq!(
            image_urls_in(text),
            [
                "https://a.example/x.png",
                "https://a.example/y.JPEG?size=2",
                "http://a.example/z.png",
                "https://a.example/w.webp#frag",
                "HTTPS://A.EXAMPLE/V.WebP",
                "https://a.example/.jpg",
                "https://é.example/ü.jpg",
            ]
        );
        assert!(image_urls_in("").is_empty());
        assert!(image_urls_in("https://").is_empty());
        assert!(image_urls_in("é https:/é").is_empty());
    }
}
