//! `krmsync catalog fetch`: downloads a catalog's pinned exec binaries
//! into the [`FunctionCache`], verifying each against its sha256 before
//! storing it. A `uri` may serve the raw binary or a `.tar.gz` holding it
//! (the entry named `bin`). Only `https://` is fetched (`http://` only from
//! a loopback address); redirects are followed, the digest decides.

use std::collections::HashSet;
use std::io::Read;
use std::time::Duration;

use super::cache::{BinaryState, FunctionCache, check, pin_hex};
use super::{CatalogDoc, ExecPlatform, Platform};

/// Options of a fetch.
#[derive(Clone, Debug)]
pub struct FetchOptions {
    /// The platforms to fetch (default: this one).
    pub platforms: Vec<Platform>,
    pub cache: FunctionCache,
    /// Connection timeout.
    pub connect_timeout: Duration,
    /// Whole-request timeout.
    pub timeout: Duration,
    /// Largest download accepted.
    pub max_bytes: usize,
}

impl FetchOptions {
    pub fn new(cache: FunctionCache) -> FetchOptions {
        FetchOptions {
            platforms: vec![Platform::host()],
            cache,
            connect_timeout: Duration::from_secs(15),
            timeout: Duration::from_secs(300),
            max_bytes: 512 << 20,
        }
    }
}

/// What a fetch did: one line per binary, and the failures.
#[derive(Clone, Debug, Default)]
pub struct FetchReport {
    pub lines: Vec<String>,
    pub errors: Vec<String>,
}

fn allowed_url(uri: &str) -> Result<reqwest::Url, String> {
    let url = reqwest::Url::parse(uri).map_err(|e| format!("uri '{uri}': {e}"))?;
    match url.scheme() {
        "https" => Ok(url),
        "http" => {
            let host = url.host_str().unwrap_or("");
            let host = host.trim_start_matches('[').trim_end_matches(']');
            let loopback = host == "localhost"
                || host
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|a| a.is_loopback());
            if loopback {
                Ok(url)
            } else {
                Err(format!("uri '{uri}': only https:// is fetched"))
            }
        }
        other => Err(format!(
            "uri '{uri}': scheme '{other}' is not fetched (https only)"
        )),
    }
}

/// The binary in a download: the raw bytes, or the `bin` entry of a
/// gzip-compressed tar.
pub fn extract(data: Vec<u8>, bin: &str, max_bytes: usize) -> Result<Vec<u8>, String> {
    if !data.starts_with(&[0x1f, 0x8b]) {
        return Ok(data);
    }
    let gz = flate2::read::GzDecoder::new(&data[..]);
    let mut ar = tar::Archive::new(gz);
    let mut names = Vec::new();
    for entry in ar
        .entries()
        .map_err(|e| format!("reading the tar.gz: {e}"))?
    {
        let mut entry = entry.map_err(|e| format!("reading the tar.gz: {e}"))?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let path = entry
            .path()
            .map_err(|e| format!("reading the tar.gz: {e}"))?
            .into_owned();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name == bin {
            let mut out = Vec::new();
            entry
                .by_ref()
                .take(max_bytes as u64 + 1)
                .read_to_end(&mut out)
                .map_err(|e| format!("reading {bin} from the tar.gz: {e}"))?;
            if out.len() > max_bytes {
                return Err(format!("{bin} in the tar.gz is over {max_bytes} bytes"));
            }
            return Ok(out);
        }
        names.push(path.display().to_string());
    }
    Err(format!(
        "the tar.gz has no file named '{bin}' (files: {})",
        names.join(", ")
    ))
}

async fn download(
    client: &reqwest::Client,
    url: reqwest::Url,
    max_bytes: usize,
) -> Result<Vec<u8>, String> {
    let mut resp = client
        .get(url.clone())
        .send()
        .await
        .map_err(|e| format!("GET {url}: {e}"))?;
    if !resp.status().is_success() {
        return Err(format!("GET {url}: {}", resp.status()));
    }
    if resp.content_length().is_some_and(|n| n > max_bytes as u64) {
        return Err(format!("GET {url}: over {max_bytes} bytes"));
    }
    let mut out = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| format!("GET {url}: {e}"))? {
        out.extend_from_slice(&chunk);
        if out.len() > max_bytes {
            return Err(format!("GET {url}: over {max_bytes} bytes"));
        }
    }
    Ok(out)
}

async fn fetch_one(
    client: &reqwest::Client,
    p: &ExecPlatform,
    hex: &str,
    opts: &FetchOptions,
) -> Result<std::path::PathBuf, String> {
    let url = allowed_url(&p.uri)?;
    let data = download(client, url, opts.max_bytes).await?;
    let bin = extract(data, &p.bin, opts.max_bytes)?;
    let actual = super::cache::sha256_hex(&bin);
    if actual != hex {
        return Err(format!(
            "{}: the binary is sha256:{actual}, the catalog pins sha256:{hex}; not stored",
            p.uri
        ));
    }
    opts.cache.store(hex, &bin)
}

fn client(opts: &FetchOptions) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .connect_timeout(opts.connect_timeout)
        .timeout(opts.timeout)
        .redirect(reqwest::redirect::Policy::limited(5))
        .build()
        .map_err(|e| format!("HTTP client: {e}"))
}

/// Fetches one pinned binary from its `uri` into the cache (unless it is
/// there already), verified; returns its path in the cache. The
/// controller's path for binaries a bundle does not carry.
pub async fn fetch_binary(
    p: &ExecPlatform,
    opts: &FetchOptions,
) -> Result<std::path::PathBuf, String> {
    let hex = pin_hex(p.sha256.as_deref().unwrap_or(""));
    if hex.is_empty() {
        return Err(format!("{}: no sha256 pin; never fetched", p.uri));
    }
    let cached = opts.cache.path(&hex);
    if check(&cached, &hex) == BinaryState::Verified {
        return Ok(cached);
    }
    if !p.uri.contains("://") {
        return Err(format!(
            "uri '{}' is a relative path: the binary must be in the bundle (localize it with \
             --platform)",
            p.uri
        ));
    }
    fetch_one(&client(opts)?, p, &hex, opts).await
}

/// Fetches every exec binary of `doc` for `opts.platforms`.
pub async fn fetch(doc: &CatalogDoc, opts: &FetchOptions) -> FetchReport {
    let mut report = FetchReport::default();
    let client = match client(opts) {
        Ok(c) => c,
        Err(e) => {
            report.errors.push(e);
            return report;
        }
    };
    let mut done = HashSet::new();
    for f in &doc.spec.krm_functions {
        for v in &f.versions {
            let Some(e) = &v.runtime.exec else { continue };
            for p in &e.platforms {
                if !opts.platforms.iter().any(|pl| pl.matches(p)) {
                    continue;
                }
                let hex = pin_hex(p.sha256.as_deref().unwrap_or(""));
                let what = format!(
                    "{}/{} {} {}/{}",
                    f.group, v.name, f.names.kind, p.os, p.arch
                );
                if !done.insert(hex.clone()) {
                    continue;
                }
                if !p.uri.contains("://") {
                    let local = doc.dir().join(&p.uri);
                    let state = match check(&local, &hex) {
                        BinaryState::Verified => "verified".to_string(),
                        BinaryState::Missing => "MISSING".to_string(),
                        BinaryState::Mismatch(a) => format!("MISMATCH (sha256:{a})"),
                    };
                    report
                        .lines
                        .push(format!("{what}: local file {} {state}", local.display()));
                    continue;
                }
                let cached = opts.cache.path(&hex);
                if check(&cached, &hex) == BinaryState::Verified {
                    report.lines.push(format!(
                        "{what}: sha256:{hex} already in {}",
                        cached.display()
                    ));
                    continue;
                }
                match fetch_one(&client, p, &hex, opts).await {
                    Ok(path) => report.lines.push(format!(
                        "{what}: fetched sha256:{hex} -> {}",
                        path.display()
                    )),
                    Err(e) => report.errors.push(format!("{what}: {e}")),
                }
            }
        }
    }
    if report.lines.is_empty() && report.errors.is_empty() {
        let pls: Vec<String> = opts.platforms.iter().map(|p| p.to_string()).collect();
        report.lines.push(format!(
            "{}: no exec binaries for {}",
            doc.path.display(),
            pls.join(", ")
        ));
    }
    report
}
