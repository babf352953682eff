//! `krmsync catalog view`: what a catalog would let run, to decide
//! whether to trust it (KEP-2906's "view catalog").

use super::cache::{BinaryState, FunctionCache, check, pin_hex};
use super::resolve::binary_candidates;
use super::{CatalogDoc, Platform};

/// What the function runtime isolates exec functions with on this machine
/// (the sandbox's probe, one line per protection, indented).
pub fn sandbox_report() -> String {
    let probe = crate::krm::sandbox::probe();
    let report = probe.report(&crate::krm::sandbox::Sandbox::default());
    let mut s = String::new();
    for line in report.lines() {
        s.push_str("\n  ");
        s.push_str(line);
    }
    s
}

fn short(hex: &str) -> String {
    format!("sha256:{}", &hex[..hex.len().min(12)])
}

/// The table of one catalog: a header, then one row per function
/// version and runtime.
pub fn render(doc: &CatalogDoc, cache: Option<&FunctionCache>) -> String {
    let host = Platform::host();
    let mut out = String::new();
    out.push_str(&format!(
        "Catalog {} ({}) {}\n  file sha256:{} (trust it with --trusted-catalog {} or \
         --trusted-catalog sha256:{})\n",
        if doc.name.is_empty() {
            "<unnamed>"
        } else {
            &doc.name
        },
        doc.api_version,
        doc.path.display(),
        doc.digest,
        doc.path.display(),
        doc.digest
    ));
    let mut rows: Vec<[String; 8]> = vec![[
        "KIND".into(),
        "GROUP".into(),
        "VERSION".into(),
        "PUBLISHER".into(),
        "RUNTIME".into(),
        "PLATFORMS".into(),
        "DIGEST".into(),
        format!("BINARY ({host})"),
    ]];
    for f in &doc.spec.krm_functions {
        for v in &f.versions {
            let base = |runtime: &str, platforms: String, digest: String, binary: String| {
                [
                    f.names.kind.clone(),
                    f.group.clone(),
                    v.name.clone(),
                    if f.publisher.is_empty() {
                        "-".into()
                    } else {
                        f.publisher.clone()
                    },
                    runtime.to_string(),
                    platforms,
                    digest,
                    binary,
                ]
            };
            if let Some(e) = &v.runtime.exec {
                for p in &e.platforms {
                    let hex = pin_hex(p.sha256.as_deref().unwrap_or(""));
                    let mut state = "missing".to_string();
                    for c in binary_candidates(p, doc.dir(), cache) {
                        match check(&c, &hex) {
                            BinaryState::Verified => {
                                state = "verified".into();
                                break;
                            }
                            BinaryState::Mismatch(a) => {
                                state = format!("MISMATCH ({})", short(&a));
                                break;
                            }
                            BinaryState::Missing => {}
                        }
                    }
                    if !host.matches(p) {
                        state = format!("{state} (other platform)");
                    }
                    rows.push(base(
                        "exec",
                        format!("{}/{}", p.os, p.arch),
                        short(&hex),
                        state,
                    ));
                }
            }
            if let Some(c) = &v.runtime.container {
                let digest = match (&c.sha256, c.image.split_once("@sha256:")) {
                    (Some(d), _) => short(&pin_hex(d)),
                    (None, Some((_, d))) => short(&pin_hex(d)),
                    (None, None) => "UNPINNED (will not run)".into(),
                };
                let mut needs = Vec::new();
                if c.require_network {
                    needs.push("network");
                }
                if c.require_storage_mount {
                    needs.push("storage");
                }
                let img = if needs.is_empty() {
                    c.image.clone()
                } else {
                    format!("{} (requires {})", c.image, needs.join(", "))
                };
                rows.push(base("container", "any".into(), digest, img));
            }
        }
    }
    let mut widths = [0usize; 8];
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    for r in &rows {
        let mut line = String::from("  ");
        for (i, (c, w)) in r.iter().zip(widths).enumerate() {
            if i + 1 == r.len() {
                line.push_str(c);
            } else {
                line.push_str(&format!("{c:<w$}  "));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The whole `catalog view` output.
pub fn render_all(docs: &[CatalogDoc], cache: Option<&FunctionCache>) -> String {
    let mut out = String::new();
    for d in docs {
        out.push_str(&render(d, cache));
        out.push('\n');
    }
    out.push_str(&format!(
        "Function cache: {}\n",
        cache
            .map(|c| c.root.display().to_string())
            .unwrap_or_else(|| "none (set XDG_CACHE_HOME or HOME, or --function-cache)".into())
    ));
    out.push_str(&format!("Sandbox:{}\n", sandbox_report()));
    out
}
