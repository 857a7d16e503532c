//! Whole fetches against the loopback TLS server: formats, TLS names, address checks and
//! DNS pinning, redirects and statuses, byte, pixel and batch bounds, deadlines on the
//! paused clock, bearer credentials and broken connections.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;
use yetibot_image_fetch::limits::{
    BODY_TIMEOUT, CONNECT_TIMEOUT, MAX_BATCH_BYTES, MAX_IMAGE_BYTES,
};
use yetibot_image_fetch::{
    AddressClass, FetchError, Fetcher, Format, Image, ImageRequest, ImageUrl, UrlError,
};

use yetibot_redaction::Secret;

use image_fixture::*;

/// A server for `images.test` (certificate from a test CA), a resolver that maps the name
/// to a public address, and a dialer that routes it to the server.
struct Setup {
    server: Server,
    resolver: Arc<FixedResolver>,
    dialer: Arc<LoopbackDialer>,
    fetcher: Fetcher,
}

async fn setup(script: impl Fn(&Seen) -> Script + Send + Sync + 'static) -> Setup {
    setup_for(
        &["images.test"],
        FixedResolver::new().answer("images.test", &[PUBLIC]),
        script,
    )
    .await
}

async fn setup_for(
    names: &[&str],
    resolver: Arc<FixedResolver>,
    script: impl Fn(&Seen) -> Script + Send + Sync + 'static,
) -> Setup {
    let pki = Pki::new();
    let server = Server::start(pki.server(names), script).await;
    let dialer = LoopbackDialer::to(&server);
    let fetcher = fetcher(&pki, resolver.clone(), dialer.clone());
    Setup {
        server,
        resolver,
        dialer,
        fetcher,
    }
}

fn request(url: &str) -> ImageRequest {
    ImageRequest::new(ImageUrl::parse(url).expect("a valid test URL"))
}

async fn fetch_one(setup: &Setup, url: &str) -> Result<Image, FetchError> {
    let mut images = setup.fetcher.fetch_all(&[request(url)]).await?;
    assert_eq!(images.len(), 1);
    Ok(images.remove(0))
}

fn public(port: u16) -> SocketAddr {
    SocketAddr::new(ip(PUBLIC), port)
}

#[tokio::test]
async fn png_jpeg_and_webp_are_fetched_with_their_dimensions() {
    let setup = setup(|seen| match seen.line() {
        "GET /a.png?size=2 HTTP/1.1" => Script::Reply(ok("image/png", PNG)),
        "GET /b.jpg HTTP/1.1" => Script::Reply(ok("image/jpeg", JPEG)),
        // A wrong content type does not matter: the bytes decide.
        "GET /c HTTP/1.1" => Script::Reply(ok("application/octet-stream", WEBP)),
        _ => Script::Reply(chunked("", WEBP_LOSSLESS)),
    })
    .await;
    let urls = [
        "https://images.test/a.png?size=2",
        "https://images.test/b.jpg",
        "https://images.test/c",
        "https://IMAGES.test:443/d.webp",
    ];
    let batch = ImageRequest::parse_batch(&urls).expect("valid URLs");
    let images = setup.fetcher.fetch_all(&batch).await.expect("four images");
    let summary: Vec<_> = images
        .iter()
        .map(|i| (i.format(), i.width(), i.height(), i.media_type()))
        .collect();
    assert_eq!(
        summary,
        [
            (Format::Png, 2, 3, "image/png"),
            (Format::Jpeg, 2, 3, "image/jpeg"),
            (Format::Webp, 2, 3, "image/webp"),
            (Format::Webp, 2, 3, "image/webp"),
        ]
    );
    assert_eq!(images[0].bytes(), PNG);
    assert_eq!(images[1].bytes(), JPEG);
    assert_eq!(images[2].bytes(), WEBP);
    assert_eq!(images[3].bytes(), WEBP_LOSSLESS);
    assert!(images[0].to_base64().starts_with("iVBORw0KGgo"));

    // One resolution per URL, one connection per image, each to the checked address.
    assert_eq!(setup.resolver.calls(), ["images.test"; 4]);
    assert_eq!(setup.dialer.dialed(), [public(443); 4]);
    assert_eq!(setup.server.connections(), 4);
    let seen = setup.server.seen();
    assert_eq!(seen.len(), 4);
    for request in &seen {
        assert_eq!(request.sni.as_deref(), Some("images.test"));
        let headers = request.headers();
        assert_eq!(headers["host"], "images.test");
        assert_eq!(headers["accept"], "image/png, image/jpeg, image/webp");
        assert!(headers["user-agent"].starts_with("yetibot-image-fetch/"));
        for absent in ["cookie", "authorization", "proxy-authorization"] {
            assert!(!headers.contains_key(absent), "{absent} in {headers:?}");
        }
    }
}

#[tokio::test]
async fn an_ip_address_url_is_verified_against_the_address_and_never_resolved() {
    let resolver = FixedResolver::new();
    let setup = setup_for(&[PUBLIC], resolver, |_| Script::Reply(ok("image/png", PNG))).await;
    let image = fetch_one(&setup, &format!("https://{PUBLIC}/a.png"))
        .await
        .expect("an image");
    assert_eq!(image.format(), Format::Png);
    assert!(setup.resolver.calls().is_empty());
    assert_eq!(setup.dialer.dialed(), [public(443)]);
    assert_eq!(setup.server.seen()[0].headers()["host"], PUBLIC);
}

#[tokio::test]
async fn a_certificate_for_another_name_fails_tls() {
    let setup = setup_for(
        &["other.test"],
        FixedResolver::new().answer("images.test", &[PUBLIC]),
        |_| Script::Reply(ok("image/png", PNG)),
    )
    .await;
    let error = fetch_one(&setup, "https://images.test/a.png")
        .await
        .expect_err("wrong name");
    assert!(matches!(&error, FetchError::Tls { image: 1, host, .. } if host == "images.test"));
    assert_eq!(
        error.to_string(),
        "image 1: no trusted TLS connection to images.test"
    );
    assert!(
        setup.server.seen().is_empty(),
        "no request after a failed handshake"
    );
}

#[tokio::test]
async fn a_certificate_from_an_untrusted_ca_fails_tls() {
    let stranger = Pki::new();
    let server = Server::start(stranger.server(&["images.test"]), |_| {
        Script::Reply(ok("image/png", PNG))
    })
    .await;
    let resolver = FixedResolver::new().answer("images.test", &[PUBLIC]);
    let trusted = Pki::new();
    let fetcher = fetcher(&trusted, resolver, LoopbackDialer::to(&server));
    let error = fetcher
        .fetch_all(&[request("https://images.test/a.png")])
        .await
        .expect_err("untrusted");
    assert!(matches!(error, FetchError::Tls { .. }), "{error:?}");
}

#[tokio::test]
async fn names_that_resolve_to_non_public_addresses_are_refused_without_dialing() {
    let cases = [
        ("10.0.0.5", AddressClass::Private),
        ("127.0.0.1", AddressClass::Loopback),
        ("169.254.169.254", AddressClass::LinkLocal),
        ("100.100.1.1", AddressClass::SharedAddressSpace),
        ("0.0.0.0", AddressClass::Unspecified),
        ("::1", AddressClass::Loopback),
        ("::ffff:192.168.1.1", AddressClass::Private),
        ("64:ff9b::7f00:1", AddressClass::Loopback),
        ("fd00::1", AddressClass::UniqueLocal),
        ("fe80::1", AddressClass::LinkLocal),
    ];
    for (address, class) in cases {
        let resolver = FixedResolver::new().answer("images.test", &[address]);
        let setup = setup_for(&["images.test"], resolver, |_| {
            Script::Reply(ok("image/png", PNG))
        })
        .await;
        let error = fetch_one(&setup, "https://images.test/a.png")
            .await
            .expect_err("refused");
        assert!(
            matches!(&error, FetchError::ForbiddenAddress { image: 1, host, class: c } if host == "images.test" && *c == class),
            "{address}: {error:?}"
        );
        assert!(setup.dialer.dialed().is_empty(), "{address} was dialed");
        assert_eq!(setup.server.connections(), 0);
        assert!(!error.to_string().contains(address), "{error}");
    }
}

#[tokio::test]
async fn one_non_public_answer_among_public_ones_refuses_the_name() {
    let resolver = FixedResolver::new().answer("images.test", &[PUBLIC, PUBLIC_2, "10.1.2.3"]);
    let setup = setup_for(&["images.test"], resolver, |_| {
        Script::Reply(ok("image/png", PNG))
    })
    .await;
    let error = fetch_one(&setup, "https://images.test/a.png")
        .await
        .expect_err("refused");
    assert!(
        matches!(
            error,
            FetchError::ForbiddenAddress {
                class: AddressClass::Private,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(setup.dialer.dialed().is_empty());
    assert_eq!(
        error.to_string(),
        "image 1: images.test resolves to a private address, which is never fetched from"
    );
}

#[tokio::test]
async fn empty_and_failed_resolutions_are_their_own_errors() {
    let resolver = FixedResolver::new()
        .answer("images.test", &[])
        .fail("gone.test");
    let setup = setup_for(&["images.test"], resolver, |_| {
        Script::Reply(ok("image/png", PNG))
    })
    .await;
    let error = fetch_one(&setup, "https://images.test/a.png")
        .await
        .expect_err("none");
    assert!(
        matches!(error, FetchError::NoAddresses { image: 1, .. }),
        "{error:?}"
    );
    let error = fetch_one(&setup, "https://gone.test/a.png")
        .await
        .expect_err("fails");
    assert!(
        matches!(error, FetchError::Resolve { image: 1, .. }),
        "{error:?}"
    );
    assert_eq!(error.to_string(), "image 1: could not resolve gone.test");
    assert_eq!(setup.server.connections(), 0);
}

#[tokio::test]
async fn dns_is_resolved_once_and_the_checked_address_is_dialed() {
    // A rebinding name: public on the first lookup, loopback on any later one.
    let resolver = FixedResolver::new()
        .answer("images.test", &[PUBLIC])
        .answer("images.test", &["127.0.0.1"]);
    let setup = setup_for(&["images.test"], resolver, |_| {
        Script::Reply(ok("image/png", PNG))
    })
    .await;
    fetch_one(&setup, "https://images.test/a.png")
        .await
        .expect("an image");
    assert_eq!(setup.resolver.calls(), ["images.test"]);
    assert_eq!(setup.dialer.dialed(), [public(443)]);
}

#[tokio::test]
async fn an_unreachable_address_falls_back_to_the_next_checked_one() {
    let pki = Pki::new();
    let server = Server::start(pki.server(&["images.test"]), |_| {
        Script::Reply(ok("image/png", PNG))
    })
    .await;
    let resolver = FixedResolver::new().answer("images.test", &[PUBLIC, PUBLIC_2]);
    let dialer = LoopbackDialer::with_unreachable(&server, &[PUBLIC]);
    let fetcher = fetcher(&pki, resolver.clone(), dialer.clone());
    fetcher
        .fetch_all(&[request("https://images.test/a.png")])
        .await
        .expect("the second address answers");
    assert_eq!(
        dialer.dialed(),
        [public(443), SocketAddr::new(ip(PUBLIC_2), 443)]
    );
    assert_eq!(resolver.calls().len(), 1);

    let all_down = LoopbackDialer::with_unreachable(&server, &[PUBLIC, PUBLIC_2]);
    let fetcher = self::fetcher(&pki, resolver, all_down);
    let error = fetcher
        .fetch_all(&[request("https://images.test/a.png")])
        .await
        .expect_err("nothing answers");
    assert!(
        matches!(error, FetchError::Connect { image: 1, .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_redirect_is_refused_and_not_followed() {
    let setup = setup(|seen| match seen.line() {
        "GET /old.png HTTP/1.1" => Script::Reply(
            b"HTTP/1.1 302 Found\r\nLocation: https://images.test/new.png\r\nContent-Length: 0\r\n\r\n"
                .to_vec(),
        ),
        _ => Script::Reply(ok("image/png", PNG)),
    })
    .await;
    let error = fetch_one(&setup, "https://images.test/old.png")
        .await
        .expect_err("redirect");
    assert!(
        matches!(&error, FetchError::Redirect { image: 1, status: 302, host } if host == "images.test"),
        "{error:?}"
    );
    assert_eq!(setup.server.seen().len(), 1);
    assert_eq!(setup.server.connections(), 1);
    assert_eq!(setup.resolver.calls().len(), 1);
    assert!(!error.to_string().contains("new.png"));
}

#[tokio::test]
async fn a_status_other_than_success_is_an_error_without_the_body() {
    let setup = setup(|_| {
        let body = b"secret internal detail";
        let mut reply = format!(
            "HTTP/1.1 404 Not Found\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        reply.extend_from_slice(body);
        Script::Reply(reply)
    })
    .await;
    let error = fetch_one(&setup, "https://images.test/missing.png?token=abc123")
        .await
        .expect_err("404");
    assert!(
        matches!(
            error,
            FetchError::Status {
                image: 1,
                status: 404,
                ..
            }
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert_eq!(
        message,
        "image 1: images.test answered with HTTP status 404"
    );
    let debug = format!("{error:?}");
    for leak in ["secret", "token", "abc123", "missing.png"] {
        assert!(
            !message.contains(leak) && !debug.contains(leak),
            "{leak}: {debug}"
        );
    }
}

#[tokio::test]
async fn a_body_over_4_mib_is_refused_by_counting_whatever_the_framing() {
    let too_big = png_of_len(MAX_IMAGE_BYTES + 1);
    let setup = setup(move |seen| match seen.line() {
        "GET /chunked.png HTTP/1.1" => Script::Reply(chunked("", &too_big)),
        "GET /unframed.png HTTP/1.1" => Script::Reply(unframed(&too_big)),
        // A Content-Length of 100 beside chunked framing: the chunks frame the body (RFC
        // 9112) and are counted, so the small declared length changes nothing.
        "GET /lying.png HTTP/1.1" => Script::Reply(chunked("Content-Length: 100\r\n", &too_big)),
        _ => Script::Reply(ok("image/png", &too_big)),
    })
    .await;
    for path in ["chunked.png", "unframed.png", "lying.png", "declared.png"] {
        let error = fetch_one(&setup, &format!("https://images.test/{path}"))
            .await
            .expect_err("too large");
        assert!(
            matches!(error, FetchError::ImageTooLarge { image: 1, .. }),
            "{path}: {error:?}"
        );
        assert_eq!(
            error.to_string(),
            "image 1 from images.test is larger than 4 MiB"
        );
    }
}

#[tokio::test]
async fn a_small_content_length_bounds_what_is_read() {
    // The declared length frames the body; what follows it is never read as image bytes.
    let setup = setup(|_| {
        let mut reply = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n".to_vec();
        reply.extend(png_of_len(MAX_IMAGE_BYTES + 1));
        Script::Reply(reply)
    })
    .await;
    let image = fetch_one(&setup, "https://images.test/a.png")
        .await
        .expect("an image");
    assert_eq!(image.bytes().len(), 100);
}

#[tokio::test]
async fn exactly_4_mib_is_accepted() {
    let setup = setup(|_| Script::Reply(chunked("", &png_of_len(MAX_IMAGE_BYTES)))).await;
    let image = fetch_one(&setup, "https://images.test/a.png")
        .await
        .expect("at the bound");
    assert_eq!(image.bytes().len(), MAX_IMAGE_BYTES);
}

#[tokio::test]
async fn a_batch_over_8_mib_is_refused() {
    let three_mib = 3 * 1024 * 1024;
    let setup = setup(move |seen| match seen.line() {
        "GET /declared.png HTTP/1.1" => Script::Reply(ok("image/png", &png_of_len(three_mib))),
        _ => Script::Reply(chunked("", &png_of_len(three_mib))),
    })
    .await;
    let counted = [
        "https://images.test/1.png",
        "https://images.test/2.png",
        "https://images.test/3.png",
    ];
    let batch = ImageRequest::parse_batch(&counted).expect("valid");
    let error = setup
        .fetcher
        .fetch_all(&batch)
        .await
        .expect_err("over 8 MiB");
    assert!(
        matches!(error, FetchError::BatchTooLarge { image: 3, .. }),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "image 3 from images.test takes the images over 8 MiB in total"
    );
    let declared = [
        "https://images.test/1.png",
        "https://images.test/2.png",
        "https://images.test/declared.png",
    ];
    let batch = ImageRequest::parse_batch(&declared).expect("valid");
    let error = setup
        .fetcher
        .fetch_all(&batch)
        .await
        .expect_err("over 8 MiB");
    assert!(
        matches!(error, FetchError::BatchTooLarge { image: 3, .. }),
        "{error:?}"
    );
    // Two images of 4 MiB exactly fill the batch.
    assert_eq!(MAX_BATCH_BYTES, 2 * MAX_IMAGE_BYTES);
}

#[tokio::test]
async fn more_than_four_images_are_refused_before_any_io() {
    let setup = setup(|_| Script::Reply(ok("image/png", PNG))).await;
    let urls = ["https://images.test/a.png"; 5];
    let error = ImageRequest::parse_batch(&urls).expect_err("five");
    assert!(
        matches!(error, FetchError::TooManyImages { count: 5 }),
        "{error:?}"
    );
    let requests: Vec<ImageRequest> = urls.iter().map(|u| request(u)).collect();
    let error = setup.fetcher.fetch_all(&requests).await.expect_err("five");
    assert!(
        matches!(error, FetchError::TooManyImages { count: 5 }),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "5 images were given; at most 4 are fetched at once"
    );
    assert!(setup.resolver.calls().is_empty());
    assert_eq!(setup.server.connections(), 0);
    assert!(setup.fetcher.fetch_all(&requests[..4]).await.is_ok());
}

#[tokio::test]
async fn one_bad_argument_in_a_batch_means_nothing_is_fetched() {
    let resolver = FixedResolver::new()
        .answer("images.test", &[PUBLIC])
        .answer("internal.test", &["10.0.0.7"]);
    let setup = setup_for(&["images.test"], resolver, |_| {
        Script::Reply(ok("image/png", PNG))
    })
    .await;

    // A URL that fails its own checks: found before anything else happens.
    let error = ImageRequest::parse_batch(&[
        "https://images.test/a.png",
        "https://images.test/b.png#frag",
    ])
    .expect_err("a fragment");
    assert!(
        matches!(
            error,
            FetchError::Url {
                image: 2,
                reason: UrlError::Fragment
            }
        ),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "image 2: the URL has a fragment (a part after #)"
    );

    // A name that resolves to a private address: found before the first connection.
    let batch =
        ImageRequest::parse_batch(&["https://images.test/a.png", "https://internal.test/b.png"])
            .expect("valid URLs");
    let error = setup.fetcher.fetch_all(&batch).await.expect_err("refused");
    assert!(
        matches!(error, FetchError::ForbiddenAddress { image: 2, .. }),
        "{error:?}"
    );
    assert_eq!(setup.server.connections(), 0);
    assert!(setup.dialer.dialed().is_empty());

    // A credential that cannot be a header value: found before any resolution.
    let bad = request("https://images.test/b.png").with_bearer(Secret::new("a\nb"), "images.test");
    let error = setup
        .fetcher
        .fetch_all(&[request("https://images.test/a.png"), bad])
        .await
        .expect_err("bad credential");
    assert!(
        matches!(error, FetchError::InvalidCredential { image: 2 }),
        "{error:?}"
    );
    assert_eq!(setup.resolver.calls(), ["images.test", "internal.test"]);
}

#[tokio::test]
async fn formats_other_than_png_jpeg_and_webp_are_refused() {
    let setup = setup(|seen| match seen.line() {
        "GET /a.gif HTTP/1.1" => Script::Reply(ok("image/gif", GIF)),
        "GET /page.png HTTP/1.1" => {
            Script::Reply(ok("image/png", b"<!doctype html><title>hi</title>"))
        }
        "GET /empty.png HTTP/1.1" => Script::Reply(ok("image/png", b"")),
        "GET /cut.png HTTP/1.1" => Script::Reply(ok("image/png", &PNG[..20])),
        _ => Script::Reply(ok("image/png", &png_header(0, 10))),
    })
    .await;
    for path in ["a.gif", "page.png"] {
        let error = fetch_one(&setup, &format!("https://images.test/{path}"))
            .await
            .expect_err("refused");
        assert!(
            matches!(error, FetchError::UnsupportedFormat { image: 1, .. }),
            "{path}: {error:?}"
        );
        assert_eq!(
            error.to_string(),
            "image 1 from images.test is not a PNG, JPEG or WebP image"
        );
    }
    for path in ["empty.png", "cut.png"] {
        let error = fetch_one(&setup, &format!("https://images.test/{path}"))
            .await
            .expect_err("refused");
        assert!(
            matches!(error, FetchError::TruncatedHeader { image: 1, .. }),
            "{path}: {error:?}"
        );
    }
    let error = fetch_one(&setup, "https://images.test/zero.png")
        .await
        .expect_err("refused");
    assert!(
        matches!(error, FetchError::BadDimensions { image: 1, .. }),
        "{error:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn an_image_over_16_megapixels_is_refused_before_its_body_arrives() {
    // The head promises a 1 MiB body, the header says 5000×4000, and then the server
    // stalls: only a decision from the header can finish before the response deadline.
    let setup = setup(|_| {
        let mut reply =
            format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", 1024 * 1024).into_bytes();
        reply.extend(png_header(5000, 4000));
        Script::ReplyThenStall(reply)
    })
    .await;
    let started = Instant::now();
    let error = fetch_one(&setup, "https://images.test/huge.png")
        .await
        .expect_err("too many pixels");
    assert!(
        matches!(
            error,
            FetchError::TooManyPixels {
                image: 1,
                width: 5000,
                height: 4000,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(started.elapsed() < BODY_TIMEOUT);
    assert_eq!(
        error.to_string(),
        "image 1 from images.test is 5000×4000 pixels, more than 16 megapixels"
    );
}

#[tokio::test(start_paused = true)]
async fn a_stalled_body_hits_the_response_deadline() {
    let setup = setup(|seen| {
        if seen.line().starts_with("GET /head") {
            return Script::ReplyThenStall(Vec::new());
        }
        let mut reply =
            format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", PNG.len()).into_bytes();
        reply.extend_from_slice(&PNG[..30]);
        Script::ReplyThenStall(reply)
    })
    .await;
    for path in ["body.png", "head.png"] {
        let started = Instant::now();
        let error = fetch_one(&setup, &format!("https://images.test/{path}"))
            .await
            .expect_err("stalled");
        assert!(
            matches!(error, FetchError::ResponseTimeout { image: 1, timeout, .. } if timeout == BODY_TIMEOUT),
            "{path}: {error:?}"
        );
        let waited = started.elapsed();
        assert!(
            waited >= BODY_TIMEOUT && waited < BODY_TIMEOUT + Duration::from_secs(1),
            "{waited:?}"
        );
        assert_eq!(
            error.to_string(),
            "image 1: images.test did not send the whole image within 30s"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_stalled_connection_hits_the_connect_deadline() {
    let pki = Pki::new();
    let resolver = FixedResolver::new().answer("images.test", &[PUBLIC]);

    // TCP never completes.
    let stalling = Arc::new(StallingDialer::default());
    let fetcher = fetcher(&pki, resolver.clone(), stalling.clone());
    let started = Instant::now();
    let error = fetcher
        .fetch_all(&[request("https://images.test/a.png")])
        .await
        .expect_err("stalled");
    assert!(
        matches!(error, FetchError::ConnectTimeout { image: 1, timeout, .. } if timeout == CONNECT_TIMEOUT),
        "{error:?}"
    );
    assert_eq!(started.elapsed(), CONNECT_TIMEOUT);
    assert_eq!(stalling.dialed.load(Ordering::SeqCst), 1);

    // TCP completes, the TLS handshake never does.
    let silent = Server::silent().await;
    let fetcher = self::fetcher(&pki, resolver, LoopbackDialer::to(&silent));
    let started = Instant::now();
    let error = fetcher
        .fetch_all(&[request("https://images.test/a.png")])
        .await
        .expect_err("stalled");
    assert!(
        matches!(error, FetchError::ConnectTimeout { .. }),
        "{error:?}"
    );
    let waited = started.elapsed();
    assert!(
        waited >= CONNECT_TIMEOUT && waited < CONNECT_TIMEOUT + Duration::from_secs(1),
        "{waited:?}"
    );
    assert_eq!(silent.connections(), 1);
    assert_eq!(
        error.to_string(),
        "image 1: connecting to images.test took longer than 5s"
    );
}

#[tokio::test]
async fn a_bearer_credential_goes_only_to_its_host() {
    let names = ["images.test", "files.test", "cdn.files.test"];
    let resolver = FixedResolver::new()
        .answer("images.test", &[PUBLIC])
        .answer("files.test", &[PUBLIC])
        .answer("cdn.files.test", &[PUBLIC]);
    let setup = setup_for(&names, resolver, |_| Script::Reply(ok("image/png", PNG))).await;
    let token = "xoxb-0123456789-secret";
    let with_token = |url: &str, host: &str| request(url).with_bearer(Secret::new(token), host);
    let batch = [
        with_token("https://files.test/1.png", "files.test"),
        with_token("https://images.test/2.png", "files.test"),
        with_token("https://FILES.TEST/3.png", "Files.Test"),
        with_token("https://cdn.files.test/4.png", "files.test"),
    ];
    assert!(!format!("{batch:?}").contains(token));
    setup.fetcher.fetch_all(&batch).await.expect("four images");
    let authorization: Vec<(String, Option<String>)> = setup
        .server
        .seen()
        .iter()
        .map(|seen| {
            let headers = seen.headers();
            (
                headers["host"].clone(),
                headers.get("authorization").cloned(),
            )
        })
        .collect();
    let bearer = Some(format!("Bearer {token}"));
    assert_eq!(
        authorization,
        [
            ("files.test".to_owned(), bearer.clone()),
            ("images.test".to_owned(), None),
            ("files.test".to_owned(), bearer),
            ("cdn.files.test".to_owned(), None),
        ]
    );
}

#[tokio::test]
async fn errors_never_print_the_credential() {
    let names = ["files.test"];
    let resolver = FixedResolver::new().answer("files.test", &[PUBLIC]);
    let setup = setup_for(&names, resolver, |_| {
        Script::Reply(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n".to_vec())
    })
    .await;
    let token = "xoxb-0123456789-secret";
    let request = request("https://files.test/1.png").with_bearer(Secret::new(token), "files.test");
    let error = setup.fetcher.fetch_all(&[request]).await.expect_err("403");
    assert!(matches!(error, FetchError::Status { status: 403, .. }));
    assert!(!format!("{error} {error:?}").contains("xoxb"));
}

#[tokio::test]
async fn a_connection_closed_mid_body_is_a_lost_connection() {
    let setup = setup(|seen| {
        let mut reply = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n".to_vec();
        reply.extend_from_slice(PNG);
        if seen.line().starts_with("GET /clean") {
            // The TLS session closes properly, but before the declared length.
            Script::Reply(reply)
        } else {
            Script::ReplyThenDrop(reply)
        }
    })
    .await;
    for path in ["abrupt.png", "clean.png"] {
        let error = fetch_one(&setup, &format!("https://images.test/{path}"))
            .await
            .expect_err("cut short");
        assert!(
            matches!(error, FetchError::ConnectionLost { image: 1, .. }),
            "{path}: {error:?}"
        );
        assert_eq!(
            error.to_string(),
            "image 1: the connection to images.test broke before the whole image arrived"
        );
    }
}

#[tokio::test]
async fn a_response_that_is_not_http_is_a_protocol_error() {
    let setup = setup(|_| Script::Reply(b"SSH-2.0-OpenSSH_9.6\r\n\r\n".to_vec())).await;
    let error = fetch_one(&setup, "https://images.test/a.png")
        .await
        .expect_err("not HTTP");
    assert!(
        matches!(error, FetchError::Protocol { image: 1, .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn the_connection_is_closed_when_the_fetch_ends() {
    // The server keeps the connection open after a complete answer; only the client
    // dropping it lets the server see the end.
    let setup = setup(|_| Script::ReplyThenAwaitClose(ok("image/png", PNG))).await;
    fetch_one(&setup, "https://images.test/a.png")
        .await
        .expect("an image");
    tokio::time::timeout(Duration::from_secs(10), setup.server.closed_by_client())
        .await
        .expect("the client closed the connection");
}

#[tokio::test]
async fn an_empty_batch_does_nothing() {
    let setup = setup(|_| Script::Reply(ok("image/png", PNG))).await;
    assert!(
        setup
            .fetcher
            .fetch_all(&[])
            .await
            .expect("nothing")
            .is_empty()
    );
    assert_eq!(setup.server.connections(), 0);
}

#[test]
fn bytes_at_hand_are_held_to_the_same_rules() {
    let image = Image::from_bytes(1, "console upload", PNG).expect("a PNG");
    assert_eq!((image.width(), image.height()), (2, 3));
    assert_eq!(image.bytes(), PNG);
    let error = Image::from_bytes(2, "console upload", GIF).expect_err("GIF");
    assert_eq!(
        error.to_string(),
        "image 2 from console upload is not a PNG, JPEG or WebP image"
    );
    assert!(matches!(
        Image::from_bytes(1, "u", &png_of_len(4 * 1024 * 1024 + 1)),
        Err(FetchError::ImageTooLarge { .. })
    ));
    assert!(matches!(
        Image::from_bytes(1, "u", &png_header(5000, 4000)),
        Err(FetchError::TooManyPixels { .. })
    ));
    assert!(matches!(
        Image::from_bytes(1, "u", &PNG[..10]),
        Err(FetchError::TruncatedHeader { .. })
    ));
}
