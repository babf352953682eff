//! HTTP(S) `.tar.gz` artifacts pinned by sha256.
//!
//! The body is never held in memory: it is streamed into a file in the
//! workspace's staging dir while it is hashed and counted, the download
//! stops as soon as it passes `max_archive_bytes`, and only a file whose
//! sha256 matches is unpacked (on a blocking thread, from the file).

use std::io::Write;

use sha2::{Digest, Sha256};

use super::archive::unpack_reader;
use super::{
    Cancel, Fetched, Gate, Limits, SourceError, Staging, UrlKind, Workspace, check_url, hex,
    io_err, redact_url,
};

/// Name of the downloaded archive inside the staging dir (removed before the
/// revision is published).
const DOWNLOAD_FILE: &str = "download.tar.gz";

/// Async: if `sha256:<expected>` is already in the workspace for `key`,
/// returns it cached without any request. Otherwise GETs `url` with
/// `client` and streams the body into a temporary file in the workspace
/// (never the whole body in memory), hashing it on the way and stopping as
/// soon as it passes `max_archive_bytes` (a [`SourceError::Limit`] naming
/// the URL and the limit; a larger `Content-Length` is refused before
/// reading). Its sha256 is verified BEFORE unpacking (a mismatch is
/// [`SourceError::Checksum`] and nothing is unpacked); it is then unpacked
/// from the file (on a blocking thread) into the workspace.
///
/// `expected_sha256` is 64 hex digits, optionally prefixed `sha256:`.
///
/// URLs: `https://`; `http://` only with [`Limits::allow_insecure`] (see
/// the URL policy in the module docs of [`crate::source`]). A response
/// whose final URL (after the client's redirects) is not `https://` is
/// refused the same way.
///
/// `cancel` stops the request, the download and the unpacking with
/// [`SourceError::Cancelled`]; when it has a deadline, the request also gets
/// it as its total timeout. Without a deadline nothing bounds a slow
/// server but `cancel` (the client's own timeouts aside). If this future is
/// dropped, an unpack already running on its blocking thread is abandoned
/// and never publishes its revision. Callers hold [`Workspace::key_lock`]
/// for the call.
pub async fn fetch_http(
    ws: &Workspace,
    key: &str,
    client: &reqwest::Client,
    url: &str,
    expected_sha256: &str,
    limits: &Limits,
    cancel: &Cancel,
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
    let cancelled =
        |stage: &str| SourceError::Cancelled(format!("GET {shown}: {} {stage}", cancel.reason()));
    if cancel.is_cancelled() {
        return Err(cancelled("before the request"));
    }

    tracing::debug!(key, url = %shown, "downloading artifact");
    let download = download(ws, key, client, url, &shown, limits, cancel);
    let (staging, file, actual) = tokio::select! {
        biased;
        () = cancel.cancelled() => return Err(cancelled("while downloading")),
        r = download => r?,
    };
    if actual != expected {
        return Err(SourceError::Checksum {
            url: shown,
            expected,
            actual,
        });
    }

    let gate = Gate::default();
    let abandon = AbandonOnDrop(gate.clone());
    let limits = *limits;
    let rev = revision.clone();
    let origin = shown.clone();
    let job_cancel = cancel.clone();
    let dir = tokio::task::spawn_blocking(move || -> Result<_, SourceError> {
        let f = std::fs::File::open(&file)
            .map_err(|e| io_err(format!("opening {}", file.display()), e))?;
        let len = f
            .metadata()
            .map_err(|e| io_err(format!("inspecting {}", file.display()), e))?
            .len();
        unpack_reader(f, len, &staging.tree(), &limits, &origin, Some(&job_cancel))?;
        if job_cancel.is_cancelled() || !gate.begin_commit() {
            return Err(SourceError::Cancelled(format!(
                "GET {origin}: {} before the revision was stored",
                job_cancel.reason()
            )));
        }
        staging.commit(&rev, &[DOWNLOAD_FILE])
    })
    .await
    .map_err(|e| SourceError::Io(format!("unpacking {shown}: unpack task failed: {e}")))??;
    drop(abandon);
    tracing::info!(key, url = %shown, revision, "fetched http artifact");
    Ok(Fetched {
        revision,
        dir,
        cached: false,
    })
}

/// Abandons the unpack (see [`Gate`]) when `fetch_http`'s future is dropped
/// while it runs.
struct AbandonOnDrop(Gate);

impl Drop for AbandonOnDrop {
    fn drop(&mut self) {
        self.0.abandon();
    }
}

/// GETs `url` and streams the body into `<staging>/download.tar.gz`;
/// returns the staging dir, the file and the body's sha256 (hex).
async fn download(
    ws: &Workspace,
    key: &str,
    client: &reqwest::Client,
    url: &str,
    shown: &str,
    limits: &Limits,
    cancel: &Cancel,
) -> Result<(Staging, std::path::PathBuf, String), SourceError> {
    let http_err = |what: &str, e: reqwest::Error| {
        if e.is_timeout() && cancel.is_cancelled() {
            SourceError::Cancelled(format!("GET {shown}: {what}: {}", cancel.reason()))
        } else {
            SourceError::Http(format!("GET {shown}: {what}{}", error_chain(&e)))
        }
    };
    let mut req = client.get(url);
    if let Some(left) = cancel.remaining() {
        req = req.timeout(left.max(std::time::Duration::from_millis(1)));
    }
    let mut resp = req.send().await.map_err(|e| http_err("", e))?;
    let status = resp.status();
    if !status.is_success() {
        return Err(SourceError::Http(format!(
            "GET {shown}: server answered {status}"
        )));
    }
    let final_url = resp.url().as_str();
    if final_url != url {
        check_url(final_url, UrlKind::Http, limits)
            .map_err(|e| SourceError::Http(format!("GET {shown}: redirected: {e}")))?;
    }
    let max = limits.max_archive_bytes;
    if let Some(len) = resp.content_length()
        && len > max
    {
        return Err(SourceError::Limit(format!(
            "GET {shown}: Content-Length {len} exceeds the limit of {max} archive bytes \
             (max_archive_bytes)"
        )));
    }

    let staging = ws.staging(key)?;
    let path = staging.path().join(DOWNLOAD_FILE);
    // Created here, so the writer below never adds entries to the staging
    // dir (which is removed as soon as this future is dropped).
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| io_err(format!("creating {}", path.display()), e))?;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(8);
    let writer = tokio::task::spawn_blocking(move || -> std::io::Result<()> {
        let mut out = file;
        while let Some(chunk) = rx.blocking_recv() {
            out.write_all(&chunk)?;
        }
        out.flush()
    });
    let mut hasher = Sha256::new();
    let mut total: u64 = 0;
    let streamed: Result<(), SourceError> = async {
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| http_err("reading body: ", e))?
        {
            total += chunk.len() as u64;
            if total > max {
                return Err(SourceError::Limit(format!(
                    "GET {shown}: body exceeds the limit of {max} archive bytes \
                     (max_archive_bytes); download stopped"
                )));
            }
            hasher.update(&chunk);
            if tx.send(Vec::from(chunk)).await.is_err() {
                // The writer failed; its error is reported below.
                break;
            }
        }
        Ok(())
    }
    .await;
    drop(tx);
    let written = writer
        .await
        .map_err(|e| SourceError::Io(format!("GET {shown}: writer task failed: {e}")))?;
    streamed?;
    written.map_err(|e| io_err(format!("GET {shown}: writing {}", path.display()), e))?;
    Ok((staging, path, hex(&hasher.finalize())))
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
    use std::io::Read;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
        super::super::sha256_hex(data)
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

        let first = fetch_http(
            &ws,
            "k",
            &client,
            &url,
            &expected,
            &insecure_limits(),
            &Cancel::default(),
        )
        .await
        .unwrap();
        assert!(!first.cached);
        assert_eq!(first.revision, format!("sha256:{expected}"));
        assert_eq!(
            std::fs::read_to_string(first.dir.join("cm.yaml")).unwrap(),
            "kind: ConfigMap\n"
        );
        assert!(first.dir.ends_with(format!("k/sha256-{expected}/tree")));
        // The downloaded file is not kept.
        assert_eq!(
            std::fs::read_dir(first.dir.parent().unwrap())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect::<Vec<_>>(),
            vec![std::ffi::OsString::from("tree")]
        );

        let second = fetch_http(
            &ws,
            "k",
            &client,
            &url,
            &format!("sha256:{}", expected.to_uppercase()),
            &insecure_limits(),
            &Cancel::default(),
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
            &Cancel::default(),
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
            &Cancel::default(),
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
        let err = fetch_http(
            &ws,
            "k",
            &reqwest::Client::new(),
            &url,
            &sha(&big),
            &limits,
            &Cancel::default(),
        )
        .await
        .unwrap_err();
        assert!(matches!(err, SourceError::Limit(_)), "{err}");
        assert!(err.to_string().contains(&url), "{err}");
        assert!(err.to_string().contains("1000"), "{err}");
        assert!(key_entries(&ws, "k").is_empty());
    }

    /// A 127.0.0.1 HTTP server answering every request with a chunked body
    /// of zeros (no Content-Length): endless, or `stall_after` bytes and
    /// then nothing (the connection stays open until the server is
    /// dropped). Counts the body bytes it sent.
    struct ChunkedServer {
        url: String,
        sent: Arc<AtomicU64>,
        stop: Arc<AtomicBool>,
    }

    impl ChunkedServer {
        fn start(stall_after: Option<u64>) -> ChunkedServer {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let url = format!("http://{}/app.tgz", listener.local_addr().unwrap());
            let sent = Arc::new(AtomicU64::new(0));
            let stop = Arc::new(AtomicBool::new(false));
            let (sent2, stop2) = (sent.clone(), stop.clone());
            std::thread::spawn(move || {
                let Ok((mut conn, _)) = listener.accept() else {
                    return;
                };
                let mut req = Vec::new();
                let mut buf = [0u8; 1024];
                while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => req.extend_from_slice(&buf[..n]),
                    }
                }
                let head = "HTTP/1.1 200 OK\r\nContent-Type: application/gzip\r\n\
                            Transfer-Encoding: chunked\r\n\r\n";
                if conn.write_all(head.as_bytes()).is_err() {
                    return;
                }
                let chunk = vec![0u8; 8192];
                loop {
                    let done = sent2.load(Ordering::SeqCst);
                    let n = match stall_after {
                        Some(max) if done >= max => {
                            while !stop2.load(Ordering::SeqCst) {
                                std::thread::sleep(std::time::Duration::from_millis(10));
                            }
                            return;
                        }
                        Some(max) => (max - done).min(8192) as usize,
                        None => 8192,
                    };
                    let framed = [
                        format!("{n:x}\r\n").as_bytes(),
                        &chunk[..n],
                        b"\r\n".as_slice(),
                    ]
                    .concat();
                    if conn.write_all(&framed).is_err() || stop2.load(Ordering::SeqCst) {
                        return;
                    }
                    sent2.fetch_add(n as u64, Ordering::SeqCst);
                }
            });
            ChunkedServer { url, sent, stop }
        }
    }

    impl Drop for ChunkedServer {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::SeqCst);
        }
    }

    #[tokio::test]
    async fn endless_body_is_cut_at_the_limit() {
        let server = ChunkedServer::start(None);
        let tmp = tempfile::tempdir().unwrap();
        let ws = Workspace::new(tmp.path()).unwrap();
        let limits = Limits {
            max_archive_bytes: 1 << 20,
            ..insecure_limits()
        };
        let err = tokio::time::timeout(
            std::time::Duration::from_secs(20),
            fetch_http(
                &ws,
                "k",
                &reqwest::Client::new(),
                &server.url,
                &"00".repeat(32),
                &limits,
                &Cancel::default(),
            ),
        )
        .await
        .expect("the download stops at the limit")
        .unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, SourceError::Limit(_)), "{msg}");
        assert!(
            msg.contains(&server.url) && msg.contains("1048576"),
            "{msg}"
        );
        assert!(
            key_entries(&ws, "k").is_empty(),
            "{:?}",
            key_entries(&ws, "k")
        );
        // The server is stopped from sending long before it could be done
        // (socket buffers hold a few MiB at most).
        let sent = server.sent.load(Ordering::SeqCst);
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        assert!(server.sent.load(Ordering::SeqCst) < sent + (32 << 20));
    }

    /// Files named `download.tar.gz` in the staging dirs of `key`.
    fn downloads(ws: &Workspace, key: &str) -> Vec<std::path::PathBuf> {
        key_entries(ws, key)
            .into_iter()
            .map(|n| ws.root().join(key).join(n).join(DOWNLOAD_FILE))
            .filter(|p| p.is_file())
            .collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn body_streams_to_a_staging_file_and_cancel_stops_it() {
        let server = ChunkedServer::start(Some(300_000));
        let tmp = tempfile::tempdir().unwrap();
        let ws = Workspace::new(tmp.path()).unwrap();
        let cancel = Cancel::new(None);
        let task = tokio::spawn({
            let (ws, cancel, url) = (ws.clone(), cancel.clone(), server.url.clone());
            async move {
                fetch_http(
                    &ws,
                    "k",
                    &reqwest::Client::new(),
                    &url,
                    &"00".repeat(32),
                    &insecure_limits(),
                    &cancel,
                )
                .await
            }
        });
        // The body so far is on disk while the download is still running.
        let t0 = std::time::Instant::now();
        loop {
            let files = downloads(&ws, "k");
            if let [f] = files.as_slice()
                && std::fs::metadata(f).unwrap().len() == 300_000
            {
                break;
            }
            assert!(t0.elapsed().as_secs() < 10, "no 300000-byte download file");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert!(!task.is_finished());
        cancel.cancel();
        let err = tokio::time::timeout(std::time::Duration::from_secs(2), task)
            .await
            .expect("cancel stops the download")
            .unwrap()
            .unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, SourceError::Cancelled(_)), "{msg}");
        assert!(msg.contains(&server.url), "{msg}");
        assert!(
            key_entries(&ws, "k").is_empty(),
            "{:?}",
            key_entries(&ws, "k")
        );
    }

    #[tokio::test]
    async fn deadline_stops_a_stalled_download() {
        let server = ChunkedServer::start(Some(1000));
        let tmp = tempfile::tempdir().unwrap();
        let ws = Workspace::new(tmp.path()).unwrap();
        let t0 = std::time::Instant::now();
        let cancel = Cancel::new(Some(t0 + std::time::Duration::from_millis(500)));
        let err = fetch_http(
            &ws,
            "k",
            &reqwest::Client::new(),
            &server.url,
            &"00".repeat(32),
            &insecure_limits(),
            &cancel,
        )
        .await
        .unwrap_err();
        assert!(t0.elapsed() < std::time::Duration::from_secs(3));
        let msg = err.to_string();
        assert!(matches!(err, SourceError::Cancelled(_)), "{msg}");
        assert!(
            msg.contains(&server.url) && msg.contains("deadline"),
            "{msg}"
        );
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
        let err = fetch_http(
            &ws,
            "k",
            &client,
            &url,
            &sha(&data),
            &Limits::default(),
            &Cancel::default(),
        )
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

        let ok = fetch_http(
            &ws,
            "k",
            &client,
            &url,
            &sha(&data),
            &insecure_limits(),
            &Cancel::default(),
        )
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
            &Cancel::default(),
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("not 64 hex digits"), "{err}");
    }
}
