//! An in-memory, stateful Kubernetes API server for tests.
//!
//! It serves plain HTTP on `127.0.0.1:0` with axum and is good enough for
//! `kube::Client`, `kube::discovery`, kube-runtime's `watcher` and for running
//! the `krmsync` binary against it. Objects are stored once per
//! group/resource (any served version reads the same object).

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::Response;
use serde_json::{Map, Value, json};
use tokio::sync::{broadcast, watch};

/// One request the fake received.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// The raw (still percent-encoded) query string, without `?`.
    pub query: String,
    /// Header names are lower-case; repeated headers are joined with ", ".
    pub headers: BTreeMap<String, String>,
    /// The body parsed as JSON (or YAML), if there was one.
    pub body: Option<Value>,
}

impl Recorded {
    /// A decoded query parameter.
    pub fn query_param(&self, key: &str) -> Option<String> {
        parse_query(&self.query).remove(key)
    }
}

#[derive(Clone, Debug)]
struct ResourceDef {
    group: String,
    version: String,
    plural: String,
    singular: String,
    kind: String,
    namespaced: bool,
    status: bool,
    /// Name of the CRD that registered it (None for built-ins).
    crd: Option<String>,
}

impl ResourceDef {
    fn gv(&self) -> String {
        gv_string(&self.group, &self.version)
    }
}

fn gv_string(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

fn builtin_defs() -> Vec<ResourceDef> {
    let d =
        |group: &str, version: &str, plural: &str, kind: &str, namespaced: bool, status: bool| {
            ResourceDef {
                group: group.into(),
                version: version.into(),
                plural: plural.into(),
                singular: kind.to_lowercase(),
                kind: kind.into(),
                namespaced,
                status,
                crd: None,
            }
        };
    vec![
        d("", "v1", "namespaces", "Namespace", false, true),
        d("", "v1", "configmaps", "ConfigMap", true, false),
        d("", "v1", "secrets", "Secret", true, false),
        d("", "v1", "services", "Service", true, true),
        d("", "v1", "serviceaccounts", "ServiceAccount", true, false),
        d("", "v1", "events", "Event", true, false),
        d("apps", "v1", "deployments", "Deployment", true, true),
        d(
            "rbac.authorization.k8s.io",
            "v1",
            "roles",
            "Role",
            true,
            false,
        ),
        d(
            "rbac.authorization.k8s.io",
            "v1",
            "rolebindings",
            "RoleBinding",
            true,
            false,
        ),
        d(
            "rbac.authorization.k8s.io",
            "v1",
            "clusterroles",
            "ClusterRole",
            false,
            false,
        ),
        d(
            "rbac.authorization.k8s.io",
            "v1",
            "clusterrolebindings",
            "ClusterRoleBinding",
            false,
            false,
        ),
        d(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            false,
            true,
        ),
        d("coordination.k8s.io", "v1", "leases", "Lease", true, false),
        d("events.k8s.io", "v1", "events", "Event", true, false),
        d(
            "krmsync.dev",
            "v1alpha1",
            "kustomizations",
            "Kustomization",
            true,
            true,
        ),
        d(
            "krmsync.dev",
            "v1alpha1",
            "catalogs",
            "Catalog",
            false,
            true,
        ),
    ]
}

/// (group, plural, namespace, name); namespace is "" for cluster-scoped.
type Key = (String, String, String, String);

#[derive(Clone, Debug)]
struct Event {
    rv: u64,
    group: String,
    plural: String,
    namespace: String,
    kind: &'static str,
    object: Value,
}

struct Failure {
    method: String,
    path_contains: String,
    code: u16,
    message: String,
}

const LOG_CAPACITY: usize = 100_000;

struct Store {
    defs: Vec<ResourceDef>,
    objects: BTreeMap<Key, Value>,
    rv: u64,
    uid: u64,
    requests: Vec<Recorded>,
    failures: Vec<Failure>,
    crd_establish: bool,
    log: VecDeque<Event>,
    /// Events with a resourceVersion at or below this are no longer in `log`.
    log_floor: u64,
    events: broadcast::Sender<Event>,
}

struct Shared {
    store: Mutex<Store>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Store> {
        // A panic in a test thread must not poison the fake for others.
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }
}

struct Handle {
    shared: Arc<Shared>,
    url: String,
    shutdown: watch::Sender<bool>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
    }
}

/// A clone-able handle to a running fake API server. The server stops when
/// the last handle drops or on [`FakeApi::shutdown`].
#[derive(Clone)]
pub struct FakeApi {
    h: Arc<Handle>,
}

#[derive(Clone)]
struct App {
    shared: Arc<Shared>,
    shutdown: watch::Receiver<bool>,
}

impl FakeApi {
    /// Binds 127.0.0.1:0 and serves in a task of the current runtime.
    pub async fn start() -> FakeApi {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr: SocketAddr = listener.local_addr().expect("local addr");
        let (events, _) = broadcast::channel(4096);
        let shared = Arc::new(Shared {
            store: Mutex::new(Store {
                defs: builtin_defs(),
                objects: BTreeMap::new(),
                rv: 1,
                uid: 0,
                requests: Vec::new(),
                failures: Vec::new(),
                crd_establish: true,
                log: VecDeque::new(),
                log_floor: 0,
                events,
            }),
        });
        let (tx, rx) = watch::channel(false);
        let app = App {
            shared: shared.clone(),
            shutdown: rx.clone(),
        };
        let router = Router::new().fallback(handle).with_state(app);
        let mut stop = rx;
        tokio::spawn(async move {
            let _ = axum::serve(listener, router)
                .with_graceful_shutdown(async move {
                    let _ = stop.wait_for(|v| *v).await;
                })
                .await;
        });
        FakeApi {
            h: Arc::new(Handle {
                shared,
                url: format!("http://{addr}"),
                shutdown: tx,
            }),
        }
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        self.h.url.clone()
    }

    /// Stops accepting connections and ends open watches.
    pub fn shutdown(&self) {
        let _ = self.h.shutdown.send(true);
    }

    /// A client config pointing at the fake (default namespace "default", no auth).
    pub fn config(&self) -> kube::Config {
        let uri: http::Uri = self.url().parse().expect("fake url is a valid uri");
        kube::Config::new(uri)
    }

    pub fn client(&self) -> kube::Client {
        kube::Client::try_from(self.config()).expect("client for the fake api")
    }

    /// A kubeconfig file pointing at the fake (for running the binary).
    pub fn kubeconfig_yaml(&self) -> String {
        format!(
            "apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: {url}
contexts:
- name: fake
  context:
    cluster: fake
    user: fake
    namespace: default
current-context: fake
users:
- name: fake
  user: {{}}
",
            url = self.url()
        )
    }

    /// Seeds or overwrites an object as given (status included). The kind
    /// must be known (built in or registered by a CRD). Panics otherwise.
    pub fn insert(&self, obj: Value) {
        let api_version = obj["apiVersion"].as_str().unwrap_or_default().to_string();
        let kind = obj["kind"].as_str().unwrap_or_default().to_string();
        let mut st = self.h.shared.lock();
        let def = st
            .def_by_kind(group_of(&api_version), &kind)
            .unwrap_or_else(|| panic!("FakeApi::insert: unknown kind {api_version} {kind}"));
        let name = obj["metadata"]["name"]
            .as_str()
            .expect("FakeApi::insert: metadata.name")
            .to_string();
        let ns = if def.namespaced {
            obj["metadata"]["namespace"]
                .as_str()
                .unwrap_or("default")
                .to_string()
        } else {
            String::new()
        };
        let key = (
            def.group.clone(),
            def.plural.clone(),
            ns.clone(),
            name.clone(),
        );
        let mut new = obj;
        let old = st.objects.get(&key).cloned();
        if let Some(old) = &old {
            for f in ["uid", "creationTimestamp"] {
                if new["metadata"].get(f).is_none()
                    && let Some(v) = old["metadata"].get(f)
                {
                    set_meta(&mut new, f, v.clone());
                }
            }
        } else {
            if new["metadata"].get("uid").is_none() {
                let uid = st.next_uid();
                set_meta(&mut new, "uid", Value::String(uid));
            }
            if new["metadata"].get("creationTimestamp").is_none() {
                set_meta(&mut new, "creationTimestamp", Value::String(now()));
            }
        }
        st.write(&def, &ns, &name, new);
    }

    pub fn get(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Value> {
        let st = self.h.shared.lock();
        let def = st.def_by_kind(group_of(api_version), kind)?;
        let ns = if def.namespaced {
            namespace.unwrap_or("default").to_string()
        } else {
            String::new()
        };
        let key = (def.group.clone(), def.plural.clone(), ns, name.to_string());
        st.objects
            .get(&key)
            .map(|o| render(o, api_version, &def.kind))
    }

    /// Every object of a kind, in all namespaces (sorted by namespace, name).
    pub fn list(&self, api_version: &str, kind: &str) -> Vec<Value> {
        let st = self.h.shared.lock();
        let Some(def) = st.def_by_kind(group_of(api_version), kind) else {
            return Vec::new();
        };
        st.objects
            .iter()
            .filter(|(k, _)| k.0 == def.group && k.1 == def.plural)
            .map(|(_, o)| render(o, api_version, &def.kind))
            .collect()
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.h.shared.lock().requests.clone()
    }

    pub fn clear_requests(&self) {
        self.h.shared.lock().requests.clear();
    }

    /// Following requests whose method matches (case-insensitive; "" or "*"
    /// matches any) and whose path contains `path_contains` fail with a
    /// Status of `code`, until [`FakeApi::clear_failures`].
    pub fn fail(&self, method: &str, path_contains: &str, code: u16, message: &str) {
        self.h.shared.lock().failures.push(Failure {
            method: method.to_string(),
            path_contains: path_contains.to_string(),
            code,
            message: message.to_string(),
        });
    }

    pub fn clear_failures(&self) {
        self.h.shared.lock().failures.clear();
    }

    /// Whether written CRDs get `Established=True` at once (default true).
    pub fn set_crd_establish(&self, establish: bool) {
        self.h.shared.lock().crd_establish = establish;
    }
}

fn group_of(api_version: &str) -> &str {
    match api_version.split_once('/') {
        Some((g, _)) => g,
        None => "",
    }
}

fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn set_meta(obj: &mut Value, field: &str, v: Value) {
    if !obj.is_object() {
        *obj = json!({});
    }
    if !obj["metadata"].is_object() {
        obj["metadata"] = json!({});
    }
    obj["metadata"][field] = v;
}

fn remove_meta(obj: &mut Value, field: &str) -> Option<Value> {
    obj.get_mut("metadata")
        .and_then(Value::as_object_mut)
        .and_then(|m| m.remove(field))
}

fn set_or_remove_status(obj: &mut Value, status: Option<Value>) {
    if let Some(m) = obj.as_object_mut() {
        match status {
            Some(s) => {
                m.insert("status".into(), s);
            }
            None => {
                m.remove("status");
            }
        }
    }
}

/// The object as served under `api_version`.
fn render(obj: &Value, api_version: &str, kind: &str) -> Value {
    let mut out = Map::new();
    out.insert("apiVersion".into(), Value::String(api_version.to_string()));
    out.insert("kind".into(), Value::String(kind.to_string()));
    if let Some(m) = obj.as_object() {
        for (k, v) in m {
            if k != "apiVersion" && k != "kind" {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}

/// Everything but metadata and status (what `generation` tracks).
fn spec_part(obj: &Value) -> Value {
    let mut o = obj.clone();
    if let Some(m) = o.as_object_mut() {
        m.remove("metadata");
        m.remove("status");
        m.remove("apiVersion");
        m.remove("kind");
    }
    o
}

/// The content a write may change (what `resourceVersion` tracks).
fn content(obj: &Value) -> Value {
    let mut o = obj.clone();
    remove_meta(&mut o, "resourceVersion");
    remove_meta(&mut o, "generation");
    remove_meta(&mut o, "managedFields");
    if let Some(m) = o.as_object_mut() {
        m.remove("apiVersion");
        m.remove("kind");
    }
    o
}

fn finalizers_empty(obj: &Value) -> bool {
    obj["metadata"]["finalizers"]
        .as_array()
        .is_none_or(|a| a.is_empty())
}

fn is_established(obj: &Value) -> bool {
    obj["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True")
    })
}

impl Store {
    fn def_by_kind(&self, group: &str, kind: &str) -> Option<ResourceDef> {
        self.defs
            .iter()
            .find(|d| d.group == group && d.kind == kind)
            .cloned()
    }

    fn def_by_resource(&self, group: &str, version: &str, plural: &str) -> Option<ResourceDef> {
        self.defs
            .iter()
            .find(|d| d.group == group && d.version == version && d.plural == plural)
            .cloned()
    }

    fn next_rv(&mut self) -> u64 {
        self.rv += 1;
        self.rv
    }

    fn next_uid(&mut self) -> String {
        self.uid += 1;
        format!("00000000-0000-4000-8000-{:012x}", self.uid)
    }

    fn emit(&mut self, ev: Event) {
        if self.log.len() >= LOG_CAPACITY
            && let Some(old) = self.log.pop_front()
        {
            self.log_floor = old.rv;
        }
        self.log.push_back(ev.clone());
        let _ = self.events.send(ev);
    }

    /// Stores `new` as the object (`def`, `ns`, `name`): normalizes it, keeps
    /// uid/creationTimestamp/deletionTimestamp of an existing object, runs the
    /// CRD hooks, bumps resourceVersion/generation only on change, removes an
    /// object whose deletion was only waiting for finalizers. Returns the
    /// stored (or removed) object.
    fn write(&mut self, def: &ResourceDef, ns: &str, name: &str, mut new: Value) -> Value {
        let key = object_key(def, ns, name);
        let old = self.objects.get(&key).cloned();
        if let Some(m) = new.as_object_mut() {
            m.insert("apiVersion".into(), Value::String(def.gv()));
            m.insert("kind".into(), Value::String(def.kind.clone()));
        }
        set_meta(&mut new, "name", Value::String(name.to_string()));
        if def.namespaced {
            set_meta(&mut new, "namespace", Value::String(ns.to_string()));
        } else {
            remove_meta(&mut new, "namespace");
        }
        remove_meta(&mut new, "managedFields");
        if let Some(old) = &old {
            for f in ["uid", "creationTimestamp", "deletionTimestamp"] {
                match old["metadata"].get(f) {
                    Some(v) => set_meta(&mut new, f, v.clone()),
                    None => {
                        remove_meta(&mut new, f);
                    }
                }
            }
        }
        if def.group == "apiextensions.k8s.io"
            && def.kind == "CustomResourceDefinition"
            && self.crd_establish
            && !is_established(&new)
        {
            establish(&mut new);
        }
        if let Some(old) = &old
            && content(old) == content(&new)
        {
            return old.clone();
        }
        let generation = match &old {
            None => 1,
            Some(old) => {
                let g = old["metadata"]["generation"].as_i64().unwrap_or(1);
                if spec_part(old) == spec_part(&new) {
                    g
                } else {
                    g + 1
                }
            }
        };
        set_meta(&mut new, "generation", json!(generation));
        let rv = self.next_rv();
        set_meta(&mut new, "resourceVersion", Value::String(rv.to_string()));
        let deleting = new["metadata"].get("deletionTimestamp").is_some();
        if deleting && finalizers_empty(&new) {
            self.remove(def, &key, new.clone(), rv);
            return new;
        }
        self.objects.insert(key, new.clone());
        self.emit(Event {
            rv,
            group: def.group.clone(),
            plural: def.plural.clone(),
            namespace: ns.to_string(),
            kind: if old.is_some() { "MODIFIED" } else { "ADDED" },
            object: new.clone(),
        });
        if def.kind == "CustomResourceDefinition" && def.group == "apiextensions.k8s.io" {
            self.register_crd(name, &new);
        }
        new
    }

    fn remove(&mut self, def: &ResourceDef, key: &Key, last: Value, rv: u64) {
        self.objects.remove(key);
        self.emit(Event {
            rv,
            group: def.group.clone(),
            plural: def.plural.clone(),
            namespace: key.2.clone(),
            kind: "DELETED",
            object: last,
        });
        if def.kind == "CustomResourceDefinition" && def.group == "apiextensions.k8s.io" {
            let name = key.3.clone();
            let gone: Vec<ResourceDef> = self
                .defs
                .iter()
                .filter(|d| d.crd.as_deref() == Some(name.as_str()))
                .cloned()
                .collect();
            self.defs
                .retain(|d| d.crd.as_deref() != Some(name.as_str()));
            for d in gone {
                if self.def_by_kind(&d.group, &d.kind).is_none() {
                    self.objects
                        .retain(|k, _| !(k.0 == d.group && k.1 == d.plural));
                }
            }
        }
    }

    fn register_crd(&mut self, name: &str, crd: &Value) {
        self.defs.retain(|d| d.crd.as_deref() != Some(name));
        let spec = &crd["spec"];
        let group = spec["group"].as_str().unwrap_or_default().to_string();
        let kind = spec["names"]["kind"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let plural = spec["names"]["plural"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if group.is_empty() || kind.is_empty() || plural.is_empty() {
            return;
        }
        let singular = spec["names"]["singular"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| kind.to_lowercase());
        let namespaced = spec["scope"].as_str() != Some("Cluster");
        for v in spec["versions"].as_array().into_iter().flatten() {
            if v["served"] == json!(false) {
                continue;
            }
            let Some(version) = v["name"].as_str() else {
                continue;
            };
            if self.def_by_resource(&group, version, &plural).is_some() {
                continue;
            }
            self.defs.push(ResourceDef {
                group: group.clone(),
                version: version.to_string(),
                plural: plural.clone(),
                singular: singular.clone(),
                kind: kind.clone(),
                namespaced,
                status: v["subresources"]["status"].is_object(),
                crd: Some(name.to_string()),
            });
        }
    }
}

fn establish(crd: &mut Value) {
    let ts = now();
    let names = crd["spec"]["names"].clone();
    let stored: Vec<Value> = crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["storage"] == json!(true))
        .map(|v| v["name"].clone())
        .collect();
    if !crd["status"].is_object() {
        crd["status"] = json!({});
    }
    crd["status"]["acceptedNames"] = names;
    crd["status"]["storedVersions"] = Value::Array(stored);
    crd["status"]["conditions"] = json!([
        {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
         "message": "no conflicts found", "lastTransitionTime": ts},
        {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
         "message": "the initial names have been accepted", "lastTransitionTime": ts},
    ]);
}

/// RFC 7386 JSON merge patch.
fn merge_patch(target: &mut Value, patch: &Value) {
    let Some(p) = patch.as_object() else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    if let Some(t) = target.as_object_mut() {
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else {
                merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }
}

// ---------------------------------------------------------------- HTTP

fn reason_for(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        406 => "NotAcceptable",
        409 => "Conflict",
        410 => "Expired",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "Unknown",
    }
}

fn status_response(code: u16, reason: &str, message: &str) -> Response {
    json_response(
        code,
        &json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code,
        }),
    )
}

fn error(code: u16, message: &str) -> Response {
    status_response(code, reason_for(code), message)
}

fn not_found(def: &ResourceDef, name: &str) -> Response {
    let resource = if def.group.is_empty() {
        def.plural.clone()
    } else {
        format!("{}.{}", def.plural, def.group)
    };
    status_response(404, "NotFound", &format!("{resource} \"{name}\" not found"))
}

fn json_response(code: u16, v: &Value) -> Response {
    let mut r = Response::new(Body::from(v.to_string()));
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    r
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = |c: u8| (c as char).to_digit(16);
                match (hex(b[i + 1]), hex(b[i + 2])) {
                    (Some(h), Some(l)) => {
                        out.push((h * 16 + l) as u8);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_query(q: &str) -> BTreeMap<String, String> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (percent_decode(k), percent_decode(v)),
            None => (percent_decode(p), String::new()),
        })
        .collect()
}

/// Splits on commas outside parentheses.
fn split_terms(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '(' => {
                depth += 1;
                cur.push(c);
            }
            ')' => {
                depth -= 1;
                cur.push(c);
            }
            ',' if depth == 0 => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter()
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect()
}

fn label_matches(selector: &str, obj: &Value) -> bool {
    let labels = &obj["metadata"]["labels"];
    let get = |k: &str| labels.get(k).and_then(Value::as_str);
    split_terms(selector).iter().all(|t| {
        let set = |rest: &str| -> Vec<String> {
            rest.trim()
                .trim_start_matches('(')
                .trim_end_matches(')')
                .split(',')
                .map(|v| v.trim().to_string())
                .collect()
        };
        if let Some((k, v)) = t.split_once("!=") {
            get(k.trim()) != Some(v.trim())
        } else if let Some((k, v)) = t.split_once("==") {
            get(k.trim()) == Some(v.trim())
        } else if let Some((k, v)) = t.split_once('=') {
            get(k.trim()) == Some(v.trim())
        } else if let Some((k, rest)) = t.split_once(" notin ") {
            get(k.trim()).is_none_or(|v| !set(rest).iter().any(|s| s == v))
        } else if let Some((k, rest)) = t.split_once(" in ") {
            get(k.trim()).is_some_and(|v| set(rest).iter().any(|s| s == v))
        } else if let Some(k) = t.strip_prefix('!') {
            get(k.trim()).is_none()
        } else {
            get(t).is_some()
        }
    })
}

fn field_matches(selector: &str, obj: &Value) -> bool {
    split_terms(selector).iter().all(|t| {
        let (k, v, neg) = if let Some((k, v)) = t.split_once("!=") {
            (k, v, true)
        } else if let Some((k, v)) = t.split_once("==") {
            (k, v, false)
        } else if let Some((k, v)) = t.split_once('=') {
            (k, v, false)
        } else {
            return true;
        };
        let actual = match k.trim() {
            "metadata.name" => obj["metadata"]["name"].as_str().unwrap_or_default(),
            "metadata.namespace" => obj["metadata"]["namespace"].as_str().unwrap_or_default(),
            _ => return true,
        };
        (actual == v.trim()) != neg
    })
}

#[derive(Clone)]
struct Filter {
    group: String,
    plural: String,
    namespace: Option<String>,
    labels: Option<String>,
    fields: Option<String>,
}

impl Filter {
    fn matches(&self, group: &str, plural: &str, namespace: &str, obj: &Value) -> bool {
        group == self.group
            && plural == self.plural
            && self.namespace.as_deref().is_none_or(|n| n == namespace)
            && self.labels.as_deref().is_none_or(|s| label_matches(s, obj))
            && self.fields.as_deref().is_none_or(|s| field_matches(s, obj))
    }
}

async fn handle(
    State(app): State<App>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    let raw_query = uri.query().unwrap_or_default().to_string();
    let query = parse_query(&raw_query);
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let body_json: Option<Value> = if body.is_empty() {
        None
    } else {
        serde_json::from_slice(&body).ok().or_else(|| {
            std::str::from_utf8(&body)
                .ok()
                .and_then(|s| serde_saphyr::from_str::<Value>(s).ok())
        })
    };
    let mut hdrs: BTreeMap<String, String> = BTreeMap::new();
    for (k, v) in &headers {
        let v = String::from_utf8_lossy(v.as_bytes()).into_owned();
        hdrs.entry(k.as_str().to_lowercase())
            .and_modify(|e| {
                e.push_str(", ");
                e.push_str(&v);
            })
            .or_insert(v);
    }
    {
        let mut st = app.shared.lock();
        st.requests.push(Recorded {
            method: method.as_str().to_string(),
            path: path.clone(),
            query: raw_query.clone(),
            headers: hdrs,
            body: body_json.clone(),
        });
        if let Some(f) = st.failures.iter().find(|f| {
            (f.method.is_empty()
                || f.method == "*"
                || f.method.eq_ignore_ascii_case(method.as_str()))
                && path.contains(&f.path_contains)
        }) {
            return error(f.code, &f.message);
        }
    }
    if !body.is_empty() && body_json.is_none() {
        return error(400, "the request body is not JSON or YAML");
    }

    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segs.as_slice() {
        ["api"] => json_response(
            200,
            &json!({"kind": "APIVersions", "versions": ["v1"],
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": uri.authority().map(|a| a.to_string()).unwrap_or_default()}]}),
        ),
        ["apis"] => json_response(200, &group_list(&app.shared.lock())),
        ["version"] => json_response(
            200,
            &json!({"major": "1", "minor": "33", "gitVersion": "v1.33.0-krmsync-fake",
                    "gitCommit": "", "gitTreeState": "clean", "buildDate": "2025-01-01T00:00:00Z",
                    "goVersion": "go1.24", "compiler": "gc", "platform": "linux/amd64"}),
        ),
        ["healthz"] | ["livez"] | ["readyz"] => Response::new(Body::from("ok")),
        ["api", v] => resource_list(&app.shared.lock(), "", v),
        ["apis", g, v] => resource_list(&app.shared.lock(), g, v),
        ["api", v, rest @ ..] => {
            resource_request(&app, &method, "", v, rest, &query, &content_type, body_json).await
        }
        ["apis", g, v, rest @ ..] => {
            resource_request(&app, &method, g, v, rest, &query, &content_type, body_json).await
        }
        _ => error(404, "the server could not find the requested resource"),
    }
}

fn group_list(st: &Store) -> Value {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for d in st.defs.iter().filter(|d| !d.group.is_empty()) {
        match groups.iter_mut().find(|(g, _)| *g == d.group) {
            Some((_, vs)) => {
                if !vs.contains(&d.version) {
                    vs.push(d.version.clone());
                }
            }
            None => groups.push((d.group.clone(), vec![d.version.clone()])),
        }
    }
    let groups: Vec<Value> = groups
        .into_iter()
        .map(|(g, vs)| {
            let versions: Vec<Value> = vs
                .iter()
                .map(|v| json!({"groupVersion": gv_string(&g, v), "version": v}))
                .collect();
            json!({"name": g, "versions": versions, "preferredVersion": versions[0].clone()})
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

fn resource_list(st: &Store, group: &str, version: &str) -> Response {
    let defs: Vec<&ResourceDef> = st
        .defs
        .iter()
        .filter(|d| d.group == group && d.version == version)
        .collect();
    if defs.is_empty() {
        return error(404, "the server could not find the requested resource");
    }
    let mut resources = Vec::new();
    for d in defs {
        resources.push(json!({
            "name": d.plural, "singularName": d.singular, "namespaced": d.namespaced,
            "kind": d.kind,
            "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
        }));
        if d.status {
            resources.push(json!({
                "name": format!("{}/status", d.plural), "singularName": "", "namespaced": d.namespaced,
                "kind": d.kind, "verbs": ["get", "patch", "update"],
            }));
        }
    }
    json_response(
        200,
        &json!({"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": gv_string(group, version), "resources": resources}),
    )
}

#[allow(clippy::too_many_arguments)]
async fn resource_request(
    app: &App,
    method: &Method,
    group: &str,
    version: &str,
    rest: &[&str],
    query: &BTreeMap<String, String>,
    content_type: &str,
    body: Option<Value>,
) -> Response {
    // (namespace, plural, name, subresource)
    let (ns, plural, name, sub): (Option<&str>, &str, Option<&str>, Option<&str>) = match rest {
        [p] => (None, p, None, None),
        ["namespaces", n, s @ ("status" | "finalize")] => (None, "namespaces", Some(n), Some(s)),
        ["namespaces", ns, p] => (Some(ns), p, None, None),
        ["namespaces", ns, p, n] => (Some(ns), p, Some(n), None),
        ["namespaces", ns, p, n, s] => (Some(ns), p, Some(n), Some(s)),
        [p, n] => (None, p, Some(n), None),
        [p, n, s] => (None, p, Some(n), Some(s)),
        _ => return error(404, "the server could not find the requested resource"),
    };
    let gv = gv_string(group, version);
    let def = {
        let st = app.shared.lock();
        st.def_by_resource(group, version, plural)
    };
    let Some(def) = def else {
        return error(404, "the server could not find the requested resource");
    };
    if (ns.is_some() && !def.namespaced) || sub.is_some_and(|s| s != "status" || !def.status) {
        return error(404, "the server could not find the requested resource");
    }
    let status_sub = sub.is_some();
    let Some(name) = name else {
        return match *method {
            Method::GET => {
                let filter = Filter {
                    group: def.group.clone(),
                    plural: def.plural.clone(),
                    namespace: ns.map(str::to_string),
                    labels: query
                        .get("labelSelector")
                        .cloned()
                        .filter(|s| !s.is_empty()),
                    fields: query
                        .get("fieldSelector")
                        .cloned()
                        .filter(|s| !s.is_empty()),
                };
                let watching = matches!(query.get("watch").map(String::as_str), Some("true" | "1"));
                if watching {
                    watch_response(app, &def, &gv, filter, query)
                } else {
                    list_response(app, &def, &gv, &filter)
                }
            }
            Method::POST => match ns {
                Some(ns) if def.namespaced => create(app, &def, &gv, ns, body),
                None if !def.namespaced => create(app, &def, &gv, "", body),
                _ => error(405, "a namespace is required to create this resource"),
            },
            _ => error(405, &format!("{method} is not supported on a collection")),
        };
    };
    let ns = if def.namespaced {
        match ns {
            Some(ns) => ns.to_string(),
            None => return error(404, "the server could not find the requested resource"),
        }
    } else {
        String::new()
    };
    match *method {
        Method::GET => {
            let st = app.shared.lock();
            let key = (def.group.clone(), def.plural.clone(), ns, name.to_string());
            match st.objects.get(&key) {
                Some(o) => json_response(200, &render(o, &gv, &def.kind)),
                None => not_found(&def, name),
            }
        }
        Method::PUT => replace(app, &def, &gv, &ns, name, status_sub, body),
        Method::PATCH => patch(
            app,
            &def,
            &gv,
            &ns,
            name,
            status_sub,
            content_type,
            query,
            body,
        ),
        Method::DELETE => {
            if status_sub {
                return error(405, "DELETE is not supported on the status subresource");
            }
            delete(app, &def, &gv, &ns, name)
        }
        _ => error(405, &format!("{method} is not supported")),
    }
}

fn list_response(app: &App, def: &ResourceDef, gv: &str, filter: &Filter) -> Response {
    let st = app.shared.lock();
    let items: Vec<Value> = st
        .objects
        .iter()
        .filter(|(k, o)| filter.matches(&k.0, &k.1, &k.2, o))
        .map(|(_, o)| render(o, gv, &def.kind))
        .collect();
    json_response(
        200,
        &json!({"kind": format!("{}List", def.kind), "apiVersion": gv,
                "metadata": {"resourceVersion": st.rv.to_string()}, "items": items}),
    )
}

fn event_line(kind: &str, obj: &Value) -> Bytes {
    let mut s = json!({"type": kind, "object": obj}).to_string();
    s.push('\n');
    Bytes::from(s)
}

struct WatchState {
    initial: VecDeque<Bytes>,
    rx: broadcast::Receiver<Event>,
    deadline: tokio::time::Instant,
    shutdown: watch::Receiver<bool>,
    filter: Filter,
    gv: String,
    kind: String,
}

fn watch_response(
    app: &App,
    def: &ResourceDef,
    gv: &str,
    filter: Filter,
    query: &BTreeMap<String, String>,
) -> Response {
    let timeout = query
        .get("timeoutSeconds")
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(3600);
    let since = query
        .get("resourceVersion")
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|rv| *rv > 0);
    let send_initial = query.get("sendInitialEvents").map(String::as_str) == Some("true");
    let bookmarks = query.get("allowWatchBookmarks").map(String::as_str) == Some("true");
    let st = app.shared.lock();
    let rx = st.events.subscribe();
    let mut initial = VecDeque::new();
    match since {
        Some(rv) if !send_initial && rv >= st.log_floor => {
            for ev in st.log.iter().filter(|e| e.rv > rv) {
                if filter.matches(&ev.group, &ev.plural, &ev.namespace, &ev.object) {
                    initial.push_back(event_line(ev.kind, &render(&ev.object, gv, &def.kind)));
                }
            }
        }
        _ => {
            for (k, o) in &st.objects {
                if filter.matches(&k.0, &k.1, &k.2, o) {
                    initial.push_back(event_line("ADDED", &render(o, gv, &def.kind)));
                }
            }
            if send_initial && bookmarks {
                initial.push_back(event_line(
                    "BOOKMARK",
                    &json!({"kind": def.kind, "apiVersion": gv,
                            "metadata": {"resourceVersion": st.rv.to_string(),
                                         "annotations": {"k8s.io/initial-events-end": "true"}}}),
                ));
            }
        }
    }
    drop(st);
    let state = WatchState {
        initial,
        rx,
        deadline: tokio::time::Instant::now() + Duration::from_secs(timeout),
        shutdown: app.shutdown.clone(),
        filter,
        gv: gv.to_string(),
        kind: def.kind.clone(),
    };
    let stream = futures::stream::unfold(state, |mut s| async move {
        if let Some(line) = s.initial.pop_front() {
            return Some((Ok::<Bytes, std::convert::Infallible>(line), s));
        }
        loop {
            if *s.shutdown.borrow() {
                return None;
            }
            tokio::select! {
                ev = s.rx.recv() => match ev {
                    Ok(ev) => {
                        if s.filter.matches(&ev.group, &ev.plural, &ev.namespace, &ev.object) {
                            let line = event_line(ev.kind, &render(&ev.object, &s.gv, &s.kind));
                            return Some((Ok(line), s));
                        }
                    }
                    // Lagged or closed: end the watch; the client re-lists.
                    Err(_) => return None,
                },
                _ = tokio::time::sleep_until(s.deadline) => return None,
                _ = s.shutdown.changed() => return None,
            }
        }
    });
    let mut r = Response::new(Body::from_stream(stream));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    r
}

/// Drops fields clients may not set on create.
fn strip_server_fields(obj: &mut Value) {
    for f in [
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "deletionTimestamp",
        "generation",
        "managedFields",
        "selfLink",
    ] {
        remove_meta(obj, f);
    }
}

fn check_body(
    def: &ResourceDef,
    ns: &str,
    name: Option<&str>,
    body: &Value,
) -> Result<(), Box<Response>> {
    if !body.is_object() {
        return Err(Box::new(error(400, "the body must be an object")));
    }
    if let Some(k) = body.get("kind").and_then(Value::as_str)
        && k != def.kind
    {
        return Err(Box::new(error(
            400,
            &format!("kind {k} does not match the resource {}", def.kind),
        )));
    }
    if def.namespaced
        && let Some(bns) = body["metadata"]["namespace"].as_str()
        && !bns.is_empty()
        && bns != ns
    {
        return Err(Box::new(error(
            400,
            "the namespace of the provided object does not match the namespace sent on the request",
        )));
    }
    if let Some(name) = name
        && let Some(bn) = body["metadata"]["name"].as_str()
        && bn != name
    {
        return Err(Box::new(error(
            400,
            "the name of the object does not match the name on the URL",
        )));
    }
    Ok(())
}

fn do_create(st: &mut Store, def: &ResourceDef, gv: &str, ns: &str, mut obj: Value) -> Response {
    let Some(name) = obj["metadata"]["name"].as_str().map(str::to_string) else {
        return error(422, "metadata.name: Required value: name is required");
    };
    let key = (
        def.group.clone(),
        def.plural.clone(),
        ns.to_string(),
        name.clone(),
    );
    if st.objects.contains_key(&key) {
        let resource = if def.group.is_empty() {
            def.plural.clone()
        } else {
            format!("{}.{}", def.plural, def.group)
        };
        return status_response(
            409,
            "AlreadyExists",
            &format!("{resource} \"{name}\" already exists"),
        );
    }
    strip_server_fields(&mut obj);
    if def.status {
        set_or_remove_status(&mut obj, None);
    }
    let uid = st.next_uid();
    set_meta(&mut obj, "uid", Value::String(uid));
    set_meta(&mut obj, "creationTimestamp", Value::String(now()));
    let stored = st.write(def, ns, &name, obj);
    json_response(201, &render(&stored, gv, &def.kind))
}

fn create(app: &App, def: &ResourceDef, gv: &str, ns: &str, body: Option<Value>) -> Response {
    let Some(body) = body else {
        return error(400, "a body is required");
    };
    if let Err(r) = check_body(def, ns, None, &body) {
        return *r;
    }
    let mut st = app.shared.lock();
    do_create(&mut st, def, gv, ns, body)
}

fn stale(old: &Value, body: &Value) -> bool {
    match body["metadata"]["resourceVersion"].as_str() {
        Some(rv) if !rv.is_empty() => old["metadata"]["resourceVersion"].as_str() != Some(rv),
        _ => false,
    }
}

fn conflict(def: &ResourceDef, name: &str) -> Response {
    status_response(
        409,
        "Conflict",
        &format!(
            "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
            def.plural
        ),
    )
}

fn replace(
    app: &App,
    def: &ResourceDef,
    gv: &str,
    ns: &str,
    name: &str,
    status_sub: bool,
    body: Option<Value>,
) -> Response {
    let Some(body) = body else {
        return error(400, "a body is required");
    };
    if let Err(r) = check_body(def, ns, Some(name), &body) {
        return *r;
    }
    let mut st = app.shared.lock();
    let key = object_key(def, ns, name);
    let Some(old) = st.objects.get(&key).cloned() else {
        return not_found(def, name);
    };
    if stale(&old, &body) {
        return conflict(def, name);
    }
    let new = if status_sub {
        let mut n = old.clone();
        set_or_remove_status(&mut n, body.get("status").cloned());
        n
    } else {
        let mut n = body;
        if def.status {
            set_or_remove_status(&mut n, old.get("status").cloned());
        }
        n
    };
    let stored = st.write(def, ns, name, new);
    json_response(200, &render(&stored, gv, &def.kind))
}

#[allow(clippy::too_many_arguments)]
fn patch(
    app: &App,
    def: &ResourceDef,
    gv: &str,
    ns: &str,
    name: &str,
    status_sub: bool,
    content_type: &str,
    query: &BTreeMap<String, String>,
    body: Option<Value>,
) -> Response {
    let Some(body) = body else {
        return error(400, "a body is required");
    };
    let ct = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let apply = match ct.as_str() {
        "application/apply-patch+yaml" => true,
        "application/merge-patch+json" | "application/strategic-merge-patch+json" => false,
        _ => {
            return error(
                415,
                &format!(
                    "the body of the request was in an unknown format - accepted media types include: application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml (got '{content_type}')"
                ),
            );
        }
    };
    if let Err(r) = check_body(def, ns, Some(name), &body) {
        return *r;
    }
    if apply && query.get("fieldManager").is_none_or(|m| m.is_empty()) {
        return error(
            422,
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
        );
    }
    let mut st = app.shared.lock();
    let key = object_key(def, ns, name);
    let old = st.objects.get(&key).cloned();
    let Some(old) = old else {
        if apply && !status_sub {
            let mut obj = body;
            set_meta(&mut obj, "name", Value::String(name.to_string()));
            return do_create(&mut st, def, gv, ns, obj);
        }
        return not_found(def, name);
    };
    if stale(&old, &body) {
        return conflict(def, name);
    }
    let new = if status_sub {
        let status = if apply {
            body.get("status").cloned()
        } else {
            let mut merged = old.clone();
            merge_patch(&mut merged, &body);
            merged.get("status").cloned()
        };
        let mut n = old.clone();
        set_or_remove_status(&mut n, status);
        n
    } else if apply {
        let mut n = body;
        if n["metadata"].get("finalizers").is_none()
            && let Some(f) = old["metadata"].get("finalizers")
        {
            set_meta(&mut n, "finalizers", f.clone());
        }
        if def.status || n.get("status").is_none() {
            set_or_remove_status(&mut n, old.get("status").cloned());
        }
        n
    } else {
        let mut n = old.clone();
        merge_patch(&mut n, &body);
        if def.status {
            set_or_remove_status(&mut n, old.get("status").cloned());
        }
        n
    };
    let stored = st.write(def, ns, name, new);
    json_response(200, &render(&stored, gv, &def.kind))
}

/// The storage key of an object: (group, plural, namespace, name).
fn object_key(def: &ResourceDef, ns: &str, name: &str) -> (String, String, String, String) {
    (
        def.group.clone(),
        def.plural.clone(),
        ns.to_string(),
        name.to_string(),
    )
}

fn delete(app: &App, def: &ResourceDef, gv: &str, ns: &str, name: &str) -> Response {
    let mut st = app.shared.lock();
    let key = object_key(def, ns, name);
    let Some(old) = st.objects.get(&key).cloned() else {
        return not_found(def, name);
    };
    if !finalizers_empty(&old) {
        if old["metadata"].get("deletionTimestamp").is_some() {
            return json_response(200, &render(&old, gv, &def.kind));
        }
        let rv = st.next_rv();
        let mut marked = old;
        set_meta(&mut marked, "deletionTimestamp", Value::String(now()));
        set_meta(
            &mut marked,
            "resourceVersion",
            Value::String(rv.to_string()),
        );
        st.objects.insert(key, marked.clone());
        st.emit(Event {
            rv,
            group: def.group.clone(),
            plural: def.plural.clone(),
            namespace: ns.to_string(),
            kind: "MODIFIED",
            object: marked.clone(),
        });
        return json_response(200, &render(&marked, gv, &def.kind));
    }
    let rv = st.next_rv();
    let mut last = old;
    set_meta(&mut last, "resourceVersion", Value::String(rv.to_string()));
    st.remove(def, &key, last.clone(), rv);
    json_response(200, &render(&last, gv, &def.kind))
}
