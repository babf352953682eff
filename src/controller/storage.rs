//! The rendered manifests, stored in the cluster beside their Kustomization.
//!
//! The YAML stream of every successful apply is gzip-compressed and written
//! to Secrets (rendered output can contain Secrets) owned by the
//! Kustomization, split so each object stays well below the 1 MiB object
//! limit. A set is identified by the digest of the stream: an unchanged
//! render writes nothing. The newest [`KEEP_REVISIONS`] sets are kept.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, Client, Resource, ResourceExt};

use crate::api::{Kustomization, kustomization::RenderedRef, owner_label_value};

/// Label on every stored Secret: the Kustomization's name.
pub const RENDERED_FOR_LABEL: &str = "krmsync.dev/rendered-for";
/// Label on every stored Secret: the first 16 hex digits of the digest.
pub const RENDERED_DIGEST_LABEL: &str = "krmsync.dev/rendered-digest";
const REVISION_ANNOTATION: &str = "krmsync.dev/revision";
const DIGEST_ANNOTATION: &str = "krmsync.dev/digest";
const INDEX_ANNOTATION: &str = "krmsync.dev/part";
const STORED_AT_ANNOTATION: &str = "krmsync.dev/stored-at";
/// Type of every stored Secret.
pub const RENDERED_TYPE: &str = "krmsync.dev/rendered";
/// Key of the gzip chunk in each Secret.
pub const DATA_KEY: &str = "manifests.yaml.gz";
/// Largest chunk per Secret (the API server refuses objects over 1 MiB).
pub const CHUNK_BYTES: usize = 768 * 1024;
/// How many rendered revisions are kept per Kustomization.
pub const KEEP_REVISIONS: usize = 3;

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("storing rendered manifests: {0}")]
    Api(#[from] kube::Error),
    #[error("rendered manifests: {0}")]
    Data(String),
}

/// `sha256:<hex>` of a stream.
pub fn digest(text: &str) -> String {
    format!("sha256:{}", sha256_hex(text.as_bytes()))
}

pub use crate::source::sha256_hex;

fn short(digest: &str) -> &str {
    let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
    &hex[..hex.len().min(16)]
}

/// gzip of the stream, split into chunks of at most `chunk` bytes.
pub fn compress_chunks(text: &str, chunk: usize) -> Result<Vec<Vec<u8>>, StorageError> {
    let mut enc = GzEncoder::new(Vec::new(), Compression::default());
    enc.write_all(text.as_bytes())
        .map_err(|e| StorageError::Data(e.to_string()))?;
    let gz = enc
        .finish()
        .map_err(|e| StorageError::Data(e.to_string()))?;
    Ok(gz.chunks(chunk.max(1)).map(<[u8]>::to_vec).collect())
}

/// Joins chunks and decompresses them, checking the digest.
pub fn decompress_chunks(
    chunks: &[Vec<u8>],
    expected_digest: &str,
) -> Result<String, StorageError> {
    let gz: Vec<u8> = chunks.concat();
    let mut text = String::new();
    GzDecoder::new(gz.as_slice())
        .read_to_string(&mut text)
        .map_err(|e| StorageError::Data(format!("corrupt gzip stream: {e}")))?;
    let actual = digest(&text);
    if actual != expected_digest {
        return Err(StorageError::Data(format!(
            "digest mismatch: status says {expected_digest}, the stored data is {actual}"
        )));
    }
    Ok(text)
}

fn secret_name(kname: &str, digest: &str, index: usize) -> String {
    // Secret names are DNS subdomains of at most 253 characters.
    let base: String = kname.chars().take(200).collect();
    format!("{base}-rendered-{}-{index}", short(digest))
}

/// Stores `text` (the rendered stream of `revision`) for `k`, unless a set
/// with the same digest is already stored; prunes older sets. Returns the
/// reference for the status.
pub async fn store(
    client: &Client,
    k: &Kustomization,
    revision: &str,
    text: &str,
) -> Result<RenderedRef, StorageError> {
    let ns = k.ns();
    let kname = k.name_any();
    let api: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let digest = digest(text);
    // Nothing stored yet by the status' account: no LIST (a first apply).
    // A set left by an interrupted first store is found by its name (409
    // below) or pruned by the next store.
    let sets = if k.status.as_ref().is_some_and(|s| s.rendered.is_some()) {
        list_sets(&api, &kname).await?
    } else {
        BTreeMap::new()
    };
    let reference = if let Some(existing) = sets.get(short(&digest)) {
        RenderedRef {
            secrets: existing.iter().map(|s| s.name_any()).collect(),
            revision: revision.to_string(),
            digest: digest.clone(),
        }
    } else {
        let chunks = compress_chunks(text, CHUNK_BYTES)?;
        let owner = owner_reference(k);
        let now = k8s_openapi::jiff::Timestamp::now().to_string();
        let mut names = Vec::with_capacity(chunks.len());
        for (i, chunk) in chunks.into_iter().enumerate() {
            let name = secret_name(&kname, &digest, i);
            let secret = Secret {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    namespace: Some(ns.clone()),
                    labels: Some(BTreeMap::from([
                        (RENDERED_FOR_LABEL.to_string(), owner_label_value(&kname)),
                        (
                            RENDERED_DIGEST_LABEL.to_string(),
                            short(&digest).to_string(),
                        ),
                    ])),
                    annotations: Some(BTreeMap::from([
                        (REVISION_ANNOTATION.to_string(), revision.to_string()),
                        (DIGEST_ANNOTATION.to_string(), digest.clone()),
                        (INDEX_ANNOTATION.to_string(), i.to_string()),
                        (STORED_AT_ANNOTATION.to_string(), now.clone()),
                    ])),
                    owner_references: owner.clone().map(|o| vec![o]),
                    ..Default::default()
                },
                type_: Some(RENDERED_TYPE.to_string()),
                data: Some(BTreeMap::from([(DATA_KEY.to_string(), ByteString(chunk))])),
                immutable: Some(true),
                ..Default::default()
            };
            match api.create(&PostParams::default(), &secret).await {
                Ok(_) => {}
                // left over from an interrupted write of the same digest
                // (immutable, same content by construction), unless
                // someone else put a Secret of that name there
                Err(kube::Error::Api(e)) if e.code == 409 => {
                    let existing = api.get(&name).await?;
                    let ours = existing.type_.as_deref() == Some(RENDERED_TYPE)
                        && existing.labels().get(RENDERED_FOR_LABEL)
                            == Some(&owner_label_value(&kname))
                        && existing.annotations().get(DIGEST_ANNOTATION) == Some(&digest);
                    if !ours {
                        return Err(StorageError::Data(format!(
                            "Secret {ns}/{name} exists and does not hold these rendered \
                             manifests; refusing to use it"
                        )));
                    }
                }
                Err(e) => return Err(e.into()),
            }
            names.push(name);
        }
        RenderedRef {
            secrets: names,
            revision: revision.to_string(),
            digest: digest.clone(),
        }
    };
    prune_sets(&api, sets, short(&digest)).await?;
    Ok(reference)
}

/// The stored sets of `kname`, by short digest, each sorted by part index.
async fn list_sets(
    api: &Api<Secret>,
    kname: &str,
) -> Result<BTreeMap<String, Vec<Secret>>, StorageError> {
    let lp = ListParams::default().labels(&format!(
        "{RENDERED_FOR_LABEL}={}",
        owner_label_value(kname)
    ));
    let mut sets: BTreeMap<String, Vec<Secret>> = BTreeMap::new();
    for s in api.list(&lp).await? {
        if let Some(d) = s.labels().get(RENDERED_DIGEST_LABEL) {
            sets.entry(d.clone()).or_default().push(s);
        }
    }
    for v in sets.values_mut() {
        v.sort_by_key(part_index);
    }
    Ok(sets)
}

fn part_index(s: &Secret) -> usize {
    s.annotations()
        .get(INDEX_ANNOTATION)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn stored_at(set: &[Secret]) -> String {
    set.first()
        .and_then(|s| s.annotations().get(STORED_AT_ANNOTATION).cloned())
        .unwrap_or_default()
}

/// Deletes all but the newest [`KEEP_REVISIONS`] sets (`current` always
/// stays) of `sets`, as listed before `current` was stored.
async fn prune_sets(
    api: &Api<Secret>,
    sets: BTreeMap<String, Vec<Secret>>,
    current: &str,
) -> Result<(), StorageError> {
    let mut others: Vec<(String, Vec<Secret>)> =
        sets.into_iter().filter(|(d, _)| d != current).collect();
    // newest first (RFC 3339 timestamps sort as text)
    others.sort_by_key(|(_, set)| std::cmp::Reverse(stored_at(set)));
    for (_, set) in others.into_iter().skip(KEEP_REVISIONS.saturating_sub(1)) {
        for s in set {
            match api.delete(&s.name_any(), &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(())
}

fn owner_reference(k: &Kustomization) -> Option<OwnerReference> {
    k.controller_owner_ref(&()).map(|mut o| {
        // the Secrets must not block the Kustomization's deletion
        o.block_owner_deletion = Some(false);
        o
    })
}

/// Reads the rendered stream a status points to.
pub async fn load(
    client: &Client,
    namespace: &str,
    r: &RenderedRef,
) -> Result<String, StorageError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let mut chunks = Vec::with_capacity(r.secrets.len());
    for name in &r.secrets {
        let s = api.get(name).await?;
        let chunk = s.data.and_then(|mut d| d.remove(DATA_KEY)).ok_or_else(|| {
            StorageError::Data(format!("Secret {namespace}/{name} has no {DATA_KEY}"))
        })?;
        chunks.push(chunk.0);
    }
    decompress_chunks(&chunks, &r.digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_round_trip_and_check_digest() {
        let text: String = (0..20_000)
            .map(|i| format!("k{i}: v{}\n", i * 7919 % 1000))
            .collect();
        let chunks = compress_chunks(&text, 1000).unwrap();
        assert!(chunks.len() > 1, "small chunks split the stream");
        assert!(chunks.iter().all(|c| c.len() <= 1000));
        assert_eq!(decompress_chunks(&chunks, &digest(&text)).unwrap(), text);
        let err = decompress_chunks(&chunks, &digest("other")).unwrap_err();
        assert!(err.to_string().contains("digest mismatch"), "{err}");
        let mut broken = chunks.clone();
        broken.pop();
        assert!(decompress_chunks(&broken, &digest(&text)).is_err());
    }

    #[test]
    fn secret_names_are_bounded() {
        let long = "a".repeat(300);
        let n = secret_name(&long, &digest("x"), 12);
        assert!(n.len() <= 253, "{}", n.len());
        assert!(n.ends_with("-12"));
        assert_eq!(short("sha256:0123456789abcdef0123"), "0123456789abcdef");
    }
}
