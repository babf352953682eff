//! HTTP(S) `.tar.gz` artifacts pinned by sha256.

use sha2::{Digest, Sha256};

use super::archive::unpack_named;
use super::{Fetched, Limits, SourceError, UrlKind, Workspace, check_url, hex, redact_url};

/// Async: if `sha256:<expected>` is already in the workspace for `key`,
/// returns it cached without any request. Otherwise GETs `url` with
/// `client`, streams the body under `max_archive_bytes`, verifies its sha256
/// BEFORE unpacking (a mismatch is [`SourceError::Checksum`] and nothing is
/// unpacked), then unpacks it (on a blocking thread) into the workspace.
///
/// `expected_sha256` is 64 hex digits, optionally prefixed `sha256:`.
///
/// URLs: `https://`; `http://` only with [`Limits::allow_insecure`] (see
/// the URL policy in the module docs of [`crate::source`]).
pub async fn fetch_http(
    ws: &Workspace,
    key: &str,
    client: &reqwest::Client,
    url: &str,
    expected_sha256: &str,
    limits: &Limits,
) -> Result<Fetched, SourceError> {
    let shown = redact_url(url);
    check_url(url, UrlKind::Http, limits).map_err(SourceError::Http)?;
    let expected = expected_sha256
        .trim()
        .strip_prefix("sha256:")
        .unwrap_or(expected_sha256.trim())
        .to_ascii_lowercase();
    if expected.len() != 64 || !expected.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(SourceError::Http(format!(
            "{shown}: expected sha256 '{expected_sha256}' is not 64 hex digits"
        )));
    }
    let revision = format!("sha256:{expected}");
    if let Some(dir) = ws.lookup(key, &revision)? {
        tracing::debug!(key, url = %shown, revision, "http revision already present");
        return Ok(Fetched {
            revision,
            dir,
            cached: true,
        });
    }

    tracing::debug!(key, url = %shown, "downloading artifact");
    let mut resp = client
        .get(url)
        .send()
        .await
        .map_err(|e| SourceError::Http(format!("GET {shown}: {}", error_chain(&e))))?;
    let status = resp.status();
    if !status.is_success() {
        return Err(SourceError::Http(format!(
            "GET {shown}: server answered {status}"
        )));
    }
    let max = limits.max_archive_bytes;
    if let Some(len) = resp.content_length()
        && len > max
    {
        return Err(SourceError::Limit(format!(
            "GET {shown}: Content-Length {len} exceeds the limit of {max} archive bytes"
        )));
    }
    let mut body = Vec::new();
    let mut hasher = Sha256::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| SourceError::Http(format!("GET {shown}: reading body: {}", error_chain(&e))))?
    {
        if body.len() as u64 + chunk.len() as u64 > max {
            return Err(SourceError::Limit(format!(
                "GET {shown}: body exceeds the limit of {max} archive bytes"
            )));
        }
        hasher.update(&chunk);
        body.extend_from_slice(&chunk);
    }
    let actual = hex(&hasher.finalize());
    if actual != expected {
        return Err(SourceError::Checksum {
            url: shown,
            expected,
            actual,
        });
    }

    let ws = ws.clone();
    let key_owned = key.to_string();
    let limits = *limits;
    let rev = revision.clone();
    let origin = shown.clone();
    let dir = tokio::task::spawn_blocking(move || -> Result<_, SourceError> {
        let staging = ws.staging(&key_owned)?;
        unpack_named(&body, &staging.tree(), &limits, &origin)?;
        staging.commit(&rev, &[])
    })
    .await
    .map_err(|e| SourceError::Io(format!("unpacking {shown}: unpack task failed: {e}")))??;
    tracing::info!(key, url = %shown, revision, "fetched http artifact");
    Ok(Fetched {
        revision,
        dir,
        cached: false,
    })
}

/// `e` and its sources, joined (reqwest's top-level message alone is vague).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(inner) = cur {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        cur = inner.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::super::insecure_limits;
    use super::*;
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    fn sample_bundle() -> Vec<u8> {
        let src = tempfile::tempdir().unwrap();
        std::fs::write(
            src.path().join("kustomization.yaml"),
            "resources: [cm.yaml]\n",
        )
        .unwrap();
        std::fs::write(src.path().join("cm.yaml"), "kind: ConfigMap\n").unwrap();
        super::super::create_bundle(src.path()).unwrap()
    }

    fn sha(data: &[u8]) -> String {
        hex(&Sha256::digest(data))
    }

    fn key_entries(ws: &Workspace, key: &str) -> Vec<String> {
        match std::fs::read_dir(ws.root().join(key)) {
            Ok(rd) => rd
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    #[tokio::test]
    async fn fetches_verifies_and_caches() {
        let server = MockServer::start().await;
        let data = sample_bundle();
        Mock::given(method("GET"))
            .and(path("/site.tar.gz"))
            .respond_with(ResponseTemplate::new(200).set_body_bytes(data.clone()))
            .expect(1)
            .mount(&server)
            .await;
        let tmp = tempfile::tempdir().unwrap();
        let ws = Workspace::new(tmp.path()).unwrap();
        let client = reqwest::Client::new();
        let url = format!("{}/site.tar.gz", server.uri());
        let expected = sha(&data);

        let first = fetch_http(&ws, "k", &client, &url, &expected, &insecure_limits())
            .await
            .unwrap();
        assert!(!first.cached);
        assert_eq!(first.revision, format!("sha256:{expected}"));
        assert_eq!(
            std::fs::read_to_string(first.dir.join("cm.yaml")).unwrap(),
            "kind: ConfigMap\n"
        );
        assert!(first.dir.ends_with(format!("k/sha256-{expected}/tree")));

        let second = fetch_http(
            &ws,
            "k",
            &client,
            &url,
            &format!("sha256:{}", expected.to_uppercase()),
            &insecure_limits(),
        )
        .await
        .unwrap();
        assert!(second.cached);
        assert_eq!(second.dir, first.dir);
        server.verify().await;
    }

    #[tokio::test]
    async fn checksum_mismatch_unpacks_nothing() {
        let server = MockServer::start().await;
        let data = sample_bundle();
        Mock::given(method("GET"))
            .respond_with(ResponseTemplate::new(200).set_body_bytes(data.clone()))
            .mount(&server)
            .await;
        let tmp = tempfile::tempdir().unwrap();
        let ws = Workspace::new(tmp.path()).unwrap();
        let url = format!("{}/site.tar.gz", server.uri());
        let wrong = "ab".repeat(32);
        let err = fetch_http(
            &ws,
            "k",
            &reqwest::Client::new(),
            &url,
            &wrong,
            &insecure_limits(),
        )
        .await
        .unwrap_err();
        match &err {
            SourceError::Checksum {
                url: u,
                expected,
                actual,
            } => {
                assert_eq!(u, &url);
                assert_eq!(expected, &wrong);
                assert_eq!(actual, &sha(&data));
            }
            other => panic!("expected a checksum error, got {other}"),
        }
        assert!(err.to_string().contains(&url));
        assert!(
            key_entries(&ws, "k").is_empty(),
            "{:?}",
            key_entries(&ws, "k")
        );
    }

    #[tokio::test]
    async fn not_found_names_url_and_status() {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .respond_with(ResponseTemplate::new(404))
            .mount(&server)
            .await;
        let tmp = tempfile::tempdir().unwrap();
        let ws = Workspace::new(tmp.path()).unwrap();
        let url = format!("{}/missing.tar.gz", server.uri());
        let err = fetch_http(
            &ws,
            "k",
            &reqwest::Client::new(),
            &url,
            &"00".repeat(32),
            &insecure_limits(),
        )
        .await
        .unwrap_err();
        assert!(matches!(err, SourceError::Http(_)), "{err}");
        let msg = err.to_string();
        assert!(msg.contains(&url) && msg.contains("404"), "{msg}");
    }

    #[tokio::test]
    async fn oversized_body_is_refused() {
        let server = MockServer::start().await;
        let big = vec![7u8; 10_000];
        Mock::given(method("GET"))
            .respond_with(ResponseTemplate::new(200).set_body_bytes(big.clone()))
            .mount(&server)
            .await;
        let tmp = tempfile::tempdir().unwrap();
        let ws = Workspace::new(tmp.path()).unwrap();
        let url = format!("{}/big.tar.gz", server.uri());
        let limits = Limits {
            max_archive_bytes: 1000,
            ..insecure_limits()
        };
        let err = fetch_http(&ws, "k", &reqwest::Client::new(), &url, &sha(&big), &limits)
            .await
            .unwrap_err();
        assert!(matches!(err, SourceError::Limit(_)), "{err}");
        assert!(err.to_string().contains(&url), "{err}");
        assert!(key_entries(&ws, "k").is_empty());
    }

    #[tokio::test]
    async fn plain_http_is_refused_without_request_unless_allowed() {
        let server = MockServer::start().await;
        let data = sample_bundle();
        Mock::given(method("GET"))
            .respond_with(ResponseTemplate::new(200).set_body_bytes(data.clone()))
            .mount(&server)
            .await;
        let tmp = tempfile::tempdir().unwrap();
        let ws = Workspace::new(tmp.path()).unwrap();
        let url = format!(
            "{}/site.tar.gz",
            server.uri().replace("http://", "http://user:pw@")
        );
        let client = reqwest::Client::new();
        let err = fetch_http(&ws, "k", &client, &url, &sha(&data), &Limits::default())
            .await
            .unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, SourceError::Http(_)), "{msg}");
        assert!(
            msg.contains(&redact_url(&url)) && !msg.contains("pw@"),
            "{msg}"
        );
        assert!(msg.contains("--allow-insecure-sources"), "{msg}");
        assert!(server.received_requests().await.unwrap().is_empty());
        assert!(key_entries(&ws, "k").is_empty());

        let ok = fetch_http(&ws, "k", &client, &url, &sha(&data), &insecure_limits())
            .await
            .unwrap();
        assert!(ok.dir.join("cm.yaml").is_file());
    }

    #[tokio::test]
    async fn bad_expected_digest_is_refused_without_request() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = Workspace::new(tmp.path()).unwrap();
        let err = fetch_http(
            &ws,
            "k",
            &reqwest::Client::new(),
            "http://127.0.0.1:9/x.tar.gz",
            "sha256:xyz",
            &insecure_limits(),
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("not 64 hex digits"), "{err}");
    }
}
