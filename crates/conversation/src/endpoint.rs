//! The one rule for the URL a provider or an MCP server is reached at, shared by every crate
//! that takes one from configuration: an absolute `http` or `https` URL that names a host and
//! carries no credentials, query or fragment. Each problem is a fixed reason that never
//! repeats the URL, which may hold a secret.

/// Why an endpoint URL is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndpointProblem {
    /// Empty or whitespace only.
    Blank,
    /// Whitespace or control characters inside.
    Unprintable,
    /// Not an absolute URL.
    NotAbsolute,
    /// A scheme other than `http` or `https`.
    Scheme,
    /// No host.
    NoHost,
    /// A user name or password inside the URL.
    Credentials,
    /// A query string.
    Query,
    /// A fragment.
    Fragment,
}

impl EndpointProblem {
    /// The reason as a configuration error says it. `credentials` is the reason given for
    /// [`EndpointProblem::Credentials`], so that each caller can say where credentials go
    /// instead (a key file, a header).
    #[must_use]
    pub fn reason(self, credentials: &'static str) -> &'static str {
        match self {
            Self::Blank => "must not be blank",
            Self::Unprintable => "must not contain whitespace or control characters",
            Self::NotAbsolute => "is not a valid absolute URL",
            Self::Scheme => "must use http or https",
            Self::NoHost => "must name a host",
            Self::Credentials => credentials,
            Self::Query => "must not contain a query string",
            Self::Fragment => "must not contain a fragment",
        }
    }
}

impl std::fmt::Display for EndpointProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.reason("must not contain credentials"))
    }
}

impl std::error::Error for EndpointProblem {}

/// Checks an endpoint URL.
///
/// # Errors
///
/// The first [`EndpointProblem`] found.
pub fn check_endpoint(raw: &str) -> Result<(), EndpointProblem> {
    if raw.trim().is_empty() {
        return Err(EndpointProblem::Blank);
    }
    if raw.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(EndpointProblem::Unprintable);
    }
    let url = url::Url::parse(raw).map_err(|_| EndpointProblem::NotAbsolute)?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(EndpointProblem::Scheme);
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(EndpointProblem::NoHost);
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(EndpointProblem::Credentials);
    }
    if url.query().is_some() {
        return Err(EndpointProblem::Query);
    }
    if url.fragment().is_some() {
        return Err(EndpointProblem::Fragment);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_problem_is_found_and_named_without_the_url() {
        assert_eq!(check_endpoint("https://api.example.test/v1"), Ok(()));
        assert_eq!(check_endpoint("http://127.0.0.1:8080"), Ok(()));
        for (raw, problem) in [
            ("  ", EndpointProblem::Blank),
            ("https://a.test/ v1", EndpointProblem::Unprintable),
            ("api.example.test/v1", EndpointProblem::NotAbsolute),
            ("ftp://a.test", EndpointProblem::Scheme),
            ("https://user:secret@a.test", EndpointProblem::Credentials),
            ("https://a.test/?key=secret", EndpointProblem::Query),
            ("https://a.test/#secret", EndpointProblem::Fragment),
        ] {
            assert_eq!(check_endpoint(raw), Err(problem), "{raw}");
            assert!(!problem.to_string().contains("secret"));
        }
    }
}
