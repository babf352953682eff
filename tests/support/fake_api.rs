//! An in-memory, stateful Kubernetes API server for tests.
//!
//! It serves plain HTTP on `127.0.0.1:0` with axum and is good enough for
//! `kube::Client`, `kube::discovery`, kube-runtime's `watcher` and for running
//! the `krmsync` binary against it. Objects are stored once per
//! group/resource (any served version reads the same object).
//!
//! Besides CRUD, status subresource, finalizers, CRDs and watch it models:
//!
//! - **Identities and RBAC** ([`FakeApi::set_rbac`], off by default). A
//!   request's identity comes from its bearer token ([`FakeApi::add_token`],
//!   [`FakeApi::config_as`]); without a token it is `system:admin` in group
//!   `system:masters`, which is always allowed. `Impersonate-User` /
//!   `Impersonate-Group` switch to another identity when the requester may
//!   `impersonate` `serviceaccounts` (in the ServiceAccount's namespace, by
//!   name), `users` or `groups` (403 otherwise); an impersonated
//!   `system:serviceaccount:NS:NAME` gets the groups `system:serviceaccounts`,
//!   `system:serviceaccounts:NS` and `system:authenticated`. Stored
//!   ClusterRoles, Roles, ClusterRoleBindings and RoleBindings are evaluated
//!   like Kubernetes does (subjects User, Group and ServiceAccount; a
//!   RoleBinding grants only in its namespace; apiGroups, resources with
//!   `resource/subresource` and `*`, verbs, resourceNames). The ClusterRoles
//!   `cluster-admin`, `admin`, `edit` (every verb on everything) and `view`
//!   (get, list, watch) exist unless an object of that name is stored.
//!   Discovery and `/version` are open to everyone. Verbs: GET → get/list/
//!   watch, POST → create, PUT → update, PATCH → patch (an apply that creates
//!   also needs create), DELETE → delete/deletecollection; the status
//!   subresource is resource `X/status`. A denial is a 403 Status with
//!   Kubernetes' message (`secrets "x" is forbidden: User "u" cannot get
//!   resource "secrets" in API group "" in the namespace "ns"`; as in
//!   Kubernetes a POST names no object). An unknown token is a 401 while RBAC
//!   is on. [`Recorded::user`] is the identity a request ran as.
//! - **dryRun**: `dryRun=All` on POST, PUT, PATCH and DELETE checks and answers
//!   as if done (RBAC included) but stores nothing and emits no watch event.
//! - **Server-side apply across field managers** (always on).
//!   `metadata.managedFields` is kept per manager and operation (`Apply` or
//!   `Update`) in `FieldsV1` form (`{"f:data":{"f:key":{}}}`; list items keyed
//!   by name as `k:{"name":"x"}`). An apply by M owns the fields in its body,
//!   removes the fields M owned before and no longer sends unless another
//!   manager owns them too, and keeps other managers' fields. Maps merge
//!   recursively; lists of objects that all have a distinct `name` merge by it,
//!   other lists are atomic. Setting a different value on a field another
//!   manager owns is a 409 (`Apply failed with 1 conflict: conflict with "m"
//!   using v1: .data.key`) unless `force=true`, which takes the ownership.
//!   POST, PUT and merge patches record `Update` ownership of the fields they
//!   change for the manager in `fieldManager` (default: the User-Agent up to
//!   its first `/`, or `unknown`) and take those fields from other managers.
//!   An apply without `metadata.finalizers` keeps the finalizers; the status
//!   of kinds with a status subresource is written only through it (status
//!   writes leave managedFields alone). A write that changes nothing but
//!   managedFields timestamps is a no-op (same resourceVersion).
//! - **Namespace lifecycle** ([`FakeApi::set_namespace_lifecycle`], off by
//!   default): creating in a missing namespace is a 404 (`namespaces "x" not
//!   found`), in a terminating one a 403 (`unable to create new content in
//!   namespace x because it is being terminated`). Deleting a Namespace sets
//!   its `deletionTimestamp` and `status.phase: Terminating`, deletes every
//!   object in it (those with finalizers only get a `deletionTimestamp`) and
//!   removes the Namespace once it is empty and has no finalizers left.
//! - **Service ports without a protocol**
//!   ([`FakeApi::set_service_port_protocol_required`], off by default), as
//!   on API servers before Kubernetes 1.21: a server-side apply (dry-run or
//!   not) of a core Service with a `spec.ports` item without `protocol` is a
//!   500 (`failed to create typed patch object: .spec.ports: element 0:
//!   associative list with keys has an element that omits key field
//!   "protocol" (and doesn't have default value)`).
//! - **Garbage collection** (always on, background): when an object is
//!   removed, objects whose `metadata.ownerReferences` no longer name any
//!   existing uid are deleted too (finalizers respected).
//! - **Faults**: [`FakeApi::fail`] (every matching request),
//!   [`FakeApi::fail_nth`] (only the n-th matching one), [`FakeApi::delay`]
//!   (matching requests are answered late); [`FakeApi::crash_after`] (the
//!   client "dies" after a number of writes: every later request fails,
//!   optionally after the last write took effect with its answer lost);
//!   [`FakeApi::clear_failures`] clears all four.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
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
    /// The user the request ran as (after impersonation); `system:admin`
    /// without a token.
    pub user: String,
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

impl Failure {
    fn matches(&self, method: &Method, path: &str) -> bool {
        method_matches(&self.method, method) && path.contains(&self.path_contains)
    }
}

/// A failure of only the `n`-th matching request (`seen` counts them).
struct NthFailure {
    failure: Failure,
    n: usize,
    seen: usize,
}

/// A client crash: after `writes_left` more writes (non-dry-run POST, PUT,
/// PATCH, DELETE) every request fails; with `lose_response` the write at the
/// crash point is carried out first and only its answer is lost.
struct Crash {
    writes_left: usize,
    lose_response: bool,
    crashed: bool,
}

/// What the crash fault does with one request.
enum CrashStep {
    Serve,
    Refuse,
    ServeThenLose,
}

struct Delay {
    method: String,
    path_contains: String,
    delay: Duration,
}

fn method_matches(pattern: &str, method: &Method) -> bool {
    pattern.is_empty() || pattern == "*" || pattern.eq_ignore_ascii_case(method.as_str())
}

/// Who a request runs as.
#[derive(Clone, Debug, PartialEq)]
struct Identity {
    user: String,
    groups: Vec<String>,
}

impl Identity {
    fn admin() -> Identity {
        Identity {
            user: "system:admin".into(),
            groups: vec!["system:masters".into(), "system:authenticated".into()],
        }
    }

    /// A user with the groups Kubernetes gives it (ServiceAccounts get theirs).
    fn of_user(user: &str) -> Identity {
        let mut groups = Vec::new();
        if let Some((ns, _)) = service_account(user) {
            groups.push("system:serviceaccounts".to_string());
            groups.push(format!("system:serviceaccounts:{ns}"));
        }
        groups.push("system:authenticated".to_string());
        Identity {
            user: user.to_string(),
            groups,
        }
    }
}

/// (namespace, name) of a `system:serviceaccount:NS:NAME` user.
fn service_account(user: &str) -> Option<(&str, &str)> {
    let rest = user.strip_prefix("system:serviceaccount:")?;
    let (ns, name) = rest.split_once(':')?;
    (!ns.is_empty() && !name.is_empty()).then_some((ns, name))
}

const LOG_CAPACITY: usize = 100_000;

struct Store {
    defs: Vec<ResourceDef>,
    objects: BTreeMap<Key, Value>,
    rv: u64,
    uid: u64,
    requests: Vec<Recorded>,
    failures: Vec<Failure>,
    nth_failures: Vec<NthFailure>,
    delays: Vec<Delay>,
    crash: Option<Crash>,
    crd_establish: bool,
    rbac: bool,
    ns_lifecycle: bool,
    service_port_protocol_required: bool,
    tokens: BTreeMap<String, Identity>,
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
                nth_failures: Vec::new(),
                delays: Vec::new(),
                crash: None,
                crd_establish: true,
                rbac: false,
                ns_lifecycle: false,
                service_port_protocol_required: false,
                tokens: BTreeMap::new(),
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
        self.kubeconfig_with_user("{}")
    }

    /// A kubeconfig file that authenticates as `user` (see [`FakeApi::config_as`]).
    pub fn kubeconfig_yaml_as(&self, user: &str) -> String {
        let token = self.token_for(user);
        self.kubeconfig_with_user(&format!("{{token: {token}}}"))
    }

    fn kubeconfig_with_user(&self, user: &str) -> String {
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
  user: {user}
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

    /// Only the `n`-th (1-based) request from now on whose method and path
    /// match as for [`FakeApi::fail`] fails with a Status of `code`; once.
    pub fn fail_nth(&self, method: &str, path_contains: &str, n: usize, code: u16, message: &str) {
        self.h.shared.lock().nth_failures.push(NthFailure {
            failure: Failure {
                method: method.to_string(),
                path_contains: path_contains.to_string(),
                code,
                message: message.to_string(),
            },
            n,
            seen: 0,
        });
    }

    /// Following requests whose method and path match as for
    /// [`FakeApi::fail`] are answered only after `delay`, until
    /// [`FakeApi::clear_failures`].
    pub fn delay(&self, method: &str, path_contains: &str, delay: Duration) {
        self.h.shared.lock().delays.push(Delay {
            method: method.to_string(),
            path_contains: path_contains.to_string(),
            delay,
        });
    }

    /// Simulates the client dying after `writes` more writes (POST, PUT,
    /// PATCH and DELETE that are not dry-runs; reads do not count): from the
    /// next write on, every request fails with a 500, as if nobody were
    /// sending them. With `lose_response`, that next write still takes
    /// effect and only its answer is lost (the process died while the API
    /// server committed it). Until [`FakeApi::clear_failures`].
    pub fn crash_after(&self, writes: usize, lose_response: bool) {
        self.h.shared.lock().crash = Some(Crash {
            writes_left: writes,
            lose_response,
            crashed: false,
        });
    }

    /// Whether the crash set by [`FakeApi::crash_after`] happened.
    pub fn crashed(&self) -> bool {
        self.h
            .shared
            .lock()
            .crash
            .as_ref()
            .is_some_and(|c| c.crashed)
    }

    /// Clears [`FakeApi::fail`], [`FakeApi::fail_nth`], [`FakeApi::delay`]
    /// and [`FakeApi::crash_after`].
    pub fn clear_failures(&self) {
        let mut st = self.h.shared.lock();
        st.failures.clear();
        st.nth_failures.clear();
        st.delays.clear();
        st.crash = None;
    }

    /// Turns RBAC on or off (default off: every request is allowed).
    pub fn set_rbac(&self, on: bool) {
        self.h.shared.lock().rbac = on;
    }

    /// Turns the namespace lifecycle on or off (default off).
    pub fn set_namespace_lifecycle(&self, on: bool) {
        self.h.shared.lock().ns_lifecycle = on;
    }

    /// Turns on (default off) the refusal of Service ports without a
    /// protocol in server-side applies, as before Kubernetes 1.21.
    pub fn set_service_port_protocol_required(&self, on: bool) {
        self.h.shared.lock().service_port_protocol_required = on;
    }

    /// Requests with `Authorization: Bearer <token>` run as `user` in
    /// `groups` (plus `system:authenticated`).
    pub fn add_token(&self, token: &str, user: &str, groups: &[&str]) {
        let mut groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
        if !groups.iter().any(|g| g == "system:authenticated") {
            groups.push("system:authenticated".into());
        }
        self.h.shared.lock().tokens.insert(
            token.to_string(),
            Identity {
                user: user.to_string(),
                groups,
            },
        );
    }

    /// Registers a token for `user` (with the groups Kubernetes gives it:
    /// ServiceAccounts get `system:serviceaccounts` and
    /// `system:serviceaccounts:NS`) and returns it.
    pub fn token_for(&self, user: &str) -> String {
        let mut st = self.h.shared.lock();
        let token = format!("fake-token-{}", st.tokens.len() + 1);
        st.tokens.insert(token.clone(), Identity::of_user(user));
        token
    }

    /// A client config for the fake that authenticates as `user`.
    pub fn config_as(&self, user: &str) -> kube::Config {
        let token = self.token_for(user);
        let mut config = self.config();
        config.auth_info =
            serde_json::from_value(json!({ "token": token })).expect("an AuthInfo with a token");
        config
    }

    pub fn client_as(&self, user: &str) -> kube::Client {
        kube::Client::try_from(self.config_as(user)).expect("client for the fake api")
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
    // Timestamps of managedFields alone do not make a change.
    if let Some(entries) = o["metadata"]
        .get_mut("managedFields")
        .and_then(Value::as_array_mut)
    {
        for e in entries {
            if let Some(e) = e.as_object_mut() {
                e.remove("time");
            }
        }
    }
    if let Some(m) = o.as_object_mut() {
        m.remove("apiVersion");
        m.remove("kind");
    }
    o
}

fn is_namespace(def: &ResourceDef) -> bool {
    def.group.is_empty() && def.plural == "namespaces"
}

fn is_deleting(obj: &Value) -> bool {
    obj["metadata"].get("deletionTimestamp").is_some()
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
    fn write(&mut self, def: &ResourceDef, ns: &str, name: &str, new: Value) -> Value {
        self.write_opt(def, ns, name, new, false)
    }

    /// [`Store::write`]; with `dry` it only answers what would be stored.
    fn write_opt(
        &mut self,
        def: &ResourceDef,
        ns: &str,
        name: &str,
        mut new: Value,
        dry: bool,
    ) -> Value {
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
        if new["metadata"]["managedFields"]
            .as_array()
            .is_some_and(|a| a.is_empty())
        {
            remove_meta(&mut new, "managedFields");
        }
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
        if dry {
            match old
                .as_ref()
                .and_then(|o| o["metadata"].get("resourceVersion"))
            {
                Some(rv) => set_meta(&mut new, "resourceVersion", rv.clone()),
                None => {
                    remove_meta(&mut new, "resourceVersion");
                }
            }
            return new;
        }
        let rv = self.next_rv();
        set_meta(&mut new, "resourceVersion", Value::String(rv.to_string()));
        let deleting = is_deleting(&new);
        let held = self.ns_lifecycle && is_namespace(def) && self.ns_has_content(name);
        if deleting && finalizers_empty(&new) && !held {
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

    /// Removes an object for good, then collects its garbage and finishes
    /// its terminating namespace.
    fn remove(&mut self, def: &ResourceDef, key: &Key, last: Value, rv: u64) {
        self.remove_only(def, key, last.clone(), rv);
        if let Some(uid) = last["metadata"]["uid"].as_str() {
            self.collect_garbage(uid);
        }
        if def.namespaced {
            self.finish_namespace(&key.2);
        }
    }

    fn remove_only(&mut self, def: &ResourceDef, key: &Key, last: Value, rv: u64) {
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

    /// Any served definition of (group, plural).
    fn def_for_key(&self, key: &Key) -> Option<ResourceDef> {
        self.defs
            .iter()
            .find(|d| d.group == key.0 && d.plural == key.1)
            .cloned()
    }

    /// Whether namespaced objects are stored in namespace `ns`.
    fn ns_has_content(&self, ns: &str) -> bool {
        self.objects
            .keys()
            .any(|k| k.2 == ns && self.def_for_key(k).is_some_and(|d| d.namespaced))
    }

    /// What DELETE does to a stored object: with finalizers it only gets a
    /// deletionTimestamp, otherwise it is removed (with its garbage). Returns
    /// the object as answered; `dry` changes nothing.
    fn delete_object(&mut self, def: &ResourceDef, key: &Key, dry: bool) -> Option<Value> {
        let old = self.objects.get(key).cloned()?;
        if self.ns_lifecycle && is_namespace(def) {
            return Some(self.delete_namespace(def, key, old, dry));
        }
        if !finalizers_empty(&old) {
            if is_deleting(&old) || dry {
                let mut marked = old;
                if !is_deleting(&marked) {
                    set_meta(&mut marked, "deletionTimestamp", Value::String(now()));
                }
                return Some(marked);
            }
            let rv = self.next_rv();
            let mut marked = old;
            set_meta(&mut marked, "deletionTimestamp", Value::String(now()));
            set_meta(
                &mut marked,
                "resourceVersion",
                Value::String(rv.to_string()),
            );
            self.objects.insert(key.clone(), marked.clone());
            self.emit(Event {
                rv,
                group: def.group.clone(),
                plural: def.plural.clone(),
                namespace: key.2.clone(),
                kind: "MODIFIED",
                object: marked.clone(),
            });
            return Some(marked);
        }
        if dry {
            return Some(old);
        }
        let rv = self.next_rv();
        let mut last = old;
        set_meta(&mut last, "resourceVersion", Value::String(rv.to_string()));
        self.remove(def, key, last.clone(), rv);
        Some(last)
    }

    /// Namespace deletion with the lifecycle on: mark it Terminating, delete
    /// its content, remove it once empty.
    fn delete_namespace(&mut self, def: &ResourceDef, key: &Key, old: Value, dry: bool) -> Value {
        let ns = key.3.clone();
        let mut marked = old.clone();
        if !is_deleting(&marked) {
            set_meta(&mut marked, "deletionTimestamp", Value::String(now()));
        }
        if !marked["status"].is_object() {
            marked["status"] = json!({});
        }
        marked["status"]["phase"] = json!("Terminating");
        if dry {
            return marked;
        }
        if marked != old {
            let rv = self.next_rv();
            set_meta(
                &mut marked,
                "resourceVersion",
                Value::String(rv.to_string()),
            );
            self.objects.insert(key.clone(), marked.clone());
            self.emit(Event {
                rv,
                group: def.group.clone(),
                plural: def.plural.clone(),
                namespace: String::new(),
                kind: "MODIFIED",
                object: marked.clone(),
            });
        }
        let content: Vec<Key> = self.objects.keys().filter(|k| k.2 == ns).cloned().collect();
        for k in content {
            if let Some(d) = self.def_for_key(&k).filter(|d| d.namespaced) {
                self.delete_object(&d, &k, false);
            }
        }
        self.finish_namespace(&ns);
        self.objects.get(key).cloned().unwrap_or(marked)
    }

    /// Removes namespace `ns` if it is terminating, empty and has no finalizers.
    fn finish_namespace(&mut self, ns: &str) {
        if !self.ns_lifecycle || ns.is_empty() {
            return;
        }
        let key: Key = (String::new(), "namespaces".into(), String::new(), ns.into());
        let Some(obj) = self.objects.get(&key).cloned() else {
            return;
        };
        if !is_deleting(&obj) || !finalizers_empty(&obj) || self.ns_has_content(ns) {
            return;
        }
        let Some(def) = self.def_for_key(&key) else {
            return;
        };
        let rv = self.next_rv();
        let mut last = obj;
        set_meta(&mut last, "resourceVersion", Value::String(rv.to_string()));
        self.remove(&def, &key, last, rv);
    }

    /// Deletes the dependents of a removed owner whose owners are all gone.
    fn collect_garbage(&mut self, uid: &str) {
        let owned_by = |o: &Value, uid: &str| {
            o["metadata"]["ownerReferences"]
                .as_array()
                .is_some_and(|refs| refs.iter().any(|r| r["uid"].as_str() == Some(uid)))
        };
        let dependents: Vec<Key> = self
            .objects
            .iter()
            .filter(|(_, o)| owned_by(o, uid))
            .map(|(k, _)| k.clone())
            .collect();
        if dependents.is_empty() {
            return;
        }
        for k in dependents {
            let Some(obj) = self.objects.get(&k) else {
                continue;
            };
            let live: BTreeSet<&str> = self
                .objects
                .values()
                .filter_map(|o| o["metadata"]["uid"].as_str())
                .collect();
            let orphaned = obj["metadata"]["ownerReferences"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| r["uid"].as_str())
                .all(|u| !live.contains(u));
            if !orphaned {
                continue;
            }
            if let Some(def) = self.def_for_key(&k) {
                self.delete_object(&def, &k, false);
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

// ---------------------------------------------------------------- RBAC

/// What a request asks to do, as Kubernetes' authorizer sees it.
#[derive(Clone, Debug)]
struct Attrs {
    verb: String,
    group: String,
    /// The plural, without subresource.
    resource: String,
    subresource: Option<String>,
    /// None: cluster scope.
    namespace: Option<String>,
    name: Option<String>,
}

impl Attrs {
    fn resource_with_sub(&self) -> String {
        match &self.subresource {
            Some(s) => format!("{}/{s}", self.resource),
            None => self.resource.clone(),
        }
    }
}

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

fn rule_allows(rule: &Value, a: &Attrs) -> bool {
    let verbs = strings(&rule["verbs"]);
    let groups = strings(&rule["apiGroups"]);
    let resources = strings(&rule["resources"]);
    let names = strings(&rule["resourceNames"]);
    let resource = a.resource_with_sub();
    let resource_ok = resources.iter().any(|r| {
        *r == "*"
            || *r == resource
            || a.subresource
                .as_deref()
                .is_some_and(|s| *r == format!("*/{s}"))
    });
    (verbs.contains(&"*") || verbs.contains(&a.verb.as_str()))
        && (groups.contains(&"*") || groups.contains(&a.group.as_str()))
        && resource_ok
        && (names.is_empty() || a.name.as_deref().is_some_and(|n| names.contains(&n)))
}

fn builtin_cluster_role(name: &str) -> Option<Vec<Value>> {
    let all = json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]});
    match name {
        "cluster-admin" | "admin" | "edit" => Some(vec![all]),
        "view" => Some(vec![
            json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]}),
        ]),
        _ => None,
    }
}

impl Store {
    fn rbac_objects<'a>(&'a self, plural: &'a str) -> impl Iterator<Item = (&'a Key, &'a Value)> {
        self.objects
            .iter()
            .filter(move |(k, _)| k.0 == RBAC_GROUP && k.1 == plural)
    }

    fn role_rules(&self, kind: &str, namespace: &str, name: &str) -> Vec<Value> {
        let (plural, ns) = match kind {
            "ClusterRole" => ("clusterroles", ""),
            "Role" => ("roles", namespace),
            _ => return Vec::new(),
        };
        let key: Key = (RBAC_GROUP.into(), plural.into(), ns.into(), name.into());
        match self.objects.get(&key) {
            Some(role) => role["rules"].as_array().cloned().unwrap_or_default(),
            None if kind == "ClusterRole" => builtin_cluster_role(name).unwrap_or_default(),
            None => Vec::new(),
        }
    }

    /// Whether RBAC (or its absence) lets `id` do `a`.
    fn allowed(&self, id: &Identity, a: &Attrs) -> bool {
        if !self.rbac || id.groups.iter().any(|g| g == "system:masters") {
            return true;
        }
        let subject_matches = |binding: &Value, binding_ns: &str| {
            binding["subjects"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|s| {
                    let name = s["name"].as_str().unwrap_or_default();
                    match s["kind"].as_str() {
                        Some("User") => name == id.user,
                        Some("Group") => id.groups.iter().any(|g| g == name),
                        Some("ServiceAccount") => {
                            let ns = s["namespace"]
                                .as_str()
                                .filter(|n| !n.is_empty())
                                .unwrap_or(binding_ns);
                            id.user == format!("system:serviceaccount:{ns}:{name}")
                        }
                        _ => false,
                    }
                })
        };
        let grants = |binding: &Value, ns: &str| {
            let kind = binding["roleRef"]["kind"].as_str().unwrap_or_default();
            let name = binding["roleRef"]["name"].as_str().unwrap_or_default();
            subject_matches(binding, ns)
                && self
                    .role_rules(kind, ns, name)
                    .iter()
                    .any(|r| rule_allows(r, a))
        };
        let cluster = self
            .rbac_objects("clusterrolebindings")
            .filter(|(_, b)| b["roleRef"]["kind"] == "ClusterRole")
            .any(|(_, b)| grants(b, ""));
        cluster
            || a.namespace.as_deref().is_some_and(|ns| {
                self.rbac_objects("rolebindings")
                    .filter(|(k, _)| k.2 == ns)
                    .any(|(_, b)| grants(b, ns))
            })
    }
}

fn forbidden(user: &str, a: &Attrs) -> Response {
    let qualified = if a.group.is_empty() {
        a.resource.clone()
    } else {
        format!("{}.{}", a.resource, a.group)
    };
    let scope = match &a.namespace {
        Some(ns) => format!("in the namespace \"{ns}\""),
        None => "at the cluster scope".to_string(),
    };
    let why = format!(
        "User \"{user}\" cannot {} resource \"{}\" in API group \"{}\" {scope}",
        a.verb,
        a.resource_with_sub(),
        a.group
    );
    let message = match &a.name {
        Some(n) => format!("{qualified} \"{n}\" is forbidden: {why}"),
        None => format!("{qualified} is forbidden: {why}"),
    };
    let mut details = json!({"group": a.group, "kind": a.resource});
    if let Some(n) = &a.name {
        details["name"] = json!(n);
    }
    json_response(
        403,
        &json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": "Forbidden", "details": details, "code": 403,
        }),
    )
}

// ---------------------------------------------------------------- field ownership

/// One step of a field path: a map key, or the item of a list keyed by name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    Field(String),
    Item(String),
}

type FieldPath = Vec<Step>;
type FieldSet = BTreeSet<FieldPath>;

/// A list whose items are objects with distinct `name`s merges by name.
fn keyed_list(items: &[Value]) -> bool {
    let mut names = BTreeSet::new();
    !items.is_empty()
        && items.iter().all(|i| {
            i.get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| names.insert(n))
        })
}

/// Leaves (scalars, atomic lists, empty maps) and keyed list items of `v`.
fn collect_fields(v: &Value, prefix: &mut FieldPath, out: &mut FieldSet) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, c) in m {
                if c.is_null() {
                    continue;
                }
                prefix.push(Step::Field(k.clone()));
                collect_fields(c, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(items) if keyed_list(items) => {
            for item in items {
                let name = item["name"].as_str().unwrap_or_default().to_string();
                prefix.push(Step::Item(name));
                out.insert(prefix.clone());
                collect_fields(item, prefix, out);
                prefix.pop();
            }
        }
        _ => {
            if !prefix.is_empty() {
                out.insert(prefix.clone());
            }
        }
    }
}

/// The part of an object whose fields are owned: no identity or
/// server-set metadata, no status when a subresource serves it.
fn owned_part(def: &ResourceDef, obj: &Value) -> Value {
    let mut o = obj.clone();
    for f in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "selfLink",
    ] {
        remove_meta(&mut o, f);
    }
    if let Some(m) = o.as_object_mut() {
        m.remove("apiVersion");
        m.remove("kind");
        if def.status {
            m.remove("status");
        }
        if m.get("metadata")
            .is_some_and(|md| md.as_object().is_some_and(|x| x.is_empty()))
        {
            m.remove("metadata");
        }
    }
    o
}

fn fields_of(def: &ResourceDef, obj: &Value) -> FieldSet {
    let mut out = FieldSet::new();
    collect_fields(&owned_part(def, obj), &mut Vec::new(), &mut out);
    out
}

fn value_at<'a>(v: &'a Value, path: &[Step]) -> Option<&'a Value> {
    let mut cur = v;
    for s in path {
        cur = match s {
            Step::Field(k) => cur.as_object()?.get(k)?,
            Step::Item(n) => cur
                .as_array()?
                .iter()
                .find(|i| i["name"].as_str() == Some(n))?,
        };
    }
    Some(cur)
}

fn value_at_mut<'a>(v: &'a mut Value, path: &[Step]) -> Option<&'a mut Value> {
    let mut cur = v;
    for s in path {
        cur = match s {
            Step::Field(k) => cur.as_object_mut()?.get_mut(k)?,
            Step::Item(n) => cur
                .as_array_mut()?
                .iter_mut()
                .find(|i| i["name"].as_str() == Some(n))?,
        };
    }
    Some(cur)
}

fn remove_at(v: &mut Value, path: &[Step]) {
    let Some((last, parent)) = path.split_last() else {
        return;
    };
    let Some(p) = value_at_mut(v, parent) else {
        return;
    };
    match last {
        Step::Field(k) => {
            if let Some(m) = p.as_object_mut() {
                m.remove(k);
            }
        }
        Step::Item(n) => {
            if let Some(a) = p.as_array_mut() {
                a.retain(|i| i["name"].as_str() != Some(n));
            }
        }
    }
}

/// `.spec.containers[name="c"].image`
fn path_string(path: &[Step]) -> String {
    path.iter()
        .map(|s| match s {
            Step::Field(k) => format!(".{k}"),
            Step::Item(n) => format!("[name=\"{n}\"]"),
        })
        .collect()
}

fn step_key(s: &Step) -> String {
    match s {
        Step::Field(k) => format!("f:{k}"),
        Step::Item(n) => format!("k:{}", json!({ "name": n })),
    }
}

#[derive(Default)]
struct FieldNode {
    member: bool,
    children: BTreeMap<String, FieldNode>,
}

impl FieldNode {
    fn to_value(&self) -> Value {
        let mut m = Map::new();
        if self.member && !self.children.is_empty() {
            m.insert(".".into(), json!({}));
        }
        for (k, c) in &self.children {
            m.insert(k.clone(), c.to_value());
        }
        Value::Object(m)
    }
}

/// A field set in Kubernetes' FieldsV1 form.
fn fields_v1(set: &FieldSet) -> Value {
    let mut root = FieldNode::default();
    for path in set {
        let mut node = &mut root;
        for s in path {
            node = node.children.entry(step_key(s)).or_default();
        }
        node.member = true;
    }
    root.to_value()
}

fn parse_fields_v1(node: &Value, prefix: &mut FieldPath, out: &mut FieldSet) {
    let Some(m) = node.as_object() else {
        return;
    };
    for (k, child) in m {
        if k == "." {
            if !prefix.is_empty() {
                out.insert(prefix.clone());
            }
            continue;
        }
        let step = if let Some(f) = k.strip_prefix("f:") {
            Step::Field(f.to_string())
        } else if let Some(key) = k
            .strip_prefix("k:")
            .and_then(|j| serde_json::from_str::<Value>(j).ok())
            .and_then(|j| j["name"].as_str().map(str::to_string))
        {
            Step::Item(key)
        } else {
            continue;
        };
        prefix.push(step);
        if child.as_object().is_none_or(|c| c.is_empty()) {
            out.insert(prefix.clone());
        } else {
            parse_fields_v1(child, prefix, out);
        }
        prefix.pop();
    }
}

/// One `metadata.managedFields` entry.
#[derive(Clone, Debug)]
struct Managed {
    manager: String,
    operation: String,
    api_version: String,
    time: String,
    subresource: Option<String>,
    fields: FieldSet,
}

impl Managed {
    fn is(&self, manager: &str, operation: &str) -> bool {
        self.manager == manager && self.operation == operation && self.subresource.is_none()
    }

    fn to_value(&self) -> Value {
        let mut v = json!({
            "manager": self.manager, "operation": self.operation,
            "apiVersion": self.api_version, "time": self.time,
            "fieldsType": "FieldsV1", "fieldsV1": fields_v1(&self.fields),
        });
        if let Some(s) = &self.subresource {
            v["subresource"] = json!(s);
        }
        v
    }
}

fn managed_of(obj: &Value) -> Vec<Managed> {
    entry_objects(&obj["metadata"]["managedFields"])
        .iter()
        .map(|e| {
            let mut fields = FieldSet::new();
            parse_fields_v1(&e["fieldsV1"], &mut Vec::new(), &mut fields);
            let s = |k: &str| e[k].as_str().unwrap_or_default().to_string();
            Managed {
                manager: s("manager"),
                operation: s("operation"),
                api_version: s("apiVersion"),
                time: s("time"),
                subresource: e["subresource"].as_str().map(str::to_string),
                fields,
            }
        })
        .collect()
}

fn entry_objects(v: &Value) -> Vec<Value> {
    v.as_array()
        .map(|a| a.iter().filter(|e| e.is_object()).cloned().collect())
        .unwrap_or_default()
}

fn set_managed(obj: &mut Value, entries: Vec<Managed>) {
    let entries: Vec<Value> = entries
        .iter()
        .filter(|e| !e.fields.is_empty())
        .map(Managed::to_value)
        .collect();
    if entries.is_empty() {
        remove_meta(obj, "managedFields");
    } else {
        set_meta(obj, "managedFields", Value::Array(entries));
    }
}

/// Merges an applied configuration into an object: maps recursively, keyed
/// lists by name, anything else replaced.
fn apply_merge(target: &mut Value, src: &Value) {
    match (target, src) {
        (Value::Object(t), Value::Object(s)) => {
            for (k, v) in s {
                if v.is_null() {
                    continue;
                }
                match t.get_mut(k) {
                    Some(tv) => apply_merge(tv, v),
                    None => {
                        let mut fresh = Value::Null;
                        apply_merge(&mut fresh, v);
                        t.insert(k.clone(), fresh);
                    }
                }
            }
        }
        // An empty list says nothing about the items of a keyed one.
        (Value::Array(t), Value::Array(s)) if s.is_empty() && keyed_list(t) => {}
        (Value::Array(t), Value::Array(s)) if keyed_list(s) && (t.is_empty() || keyed_list(t)) => {
            for item in s {
                match t.iter_mut().find(|i| i["name"] == item["name"]) {
                    Some(ti) => apply_merge(ti, item),
                    None => t.push(item.clone()),
                }
            }
        }
        (t, s) => {
            *t = strip_nulls(s);
        }
    }
}

fn strip_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, c)| !c.is_null())
                .map(|(k, c)| (k.clone(), strip_nulls(c)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The answer to an apply that conflicts with other managers.
fn apply_conflict(conflicts: &[(Managed, FieldPath)]) -> Response {
    let n = conflicts.len();
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for (m, p) in conflicts {
        let who = format!("\"{}\" using {}", m.manager, m.api_version);
        match groups.iter_mut().find(|(w, _)| *w == who) {
            Some((_, ps)) => ps.push(path_string(p)),
            None => groups.push((who, vec![path_string(p)])),
        }
    }
    let parts: Vec<String> = groups
        .iter()
        .map(|(who, ps)| {
            if ps.len() == 1 {
                format!("conflict with {who}: {}", ps[0])
            } else {
                let list: Vec<String> = ps.iter().map(|p| format!("- {p}")).collect();
                format!("conflicts with {who}:\n{}", list.join("\n"))
            }
        })
        .collect();
    let message = format!(
        "Apply failed with {n} conflict{}: {}",
        if n == 1 { "" } else { "s" },
        parts.join("\n")
    );
    let causes: Vec<Value> = conflicts
        .iter()
        .map(|(m, p)| {
            json!({"reason": "FieldManagerConflict",
                   "message": format!("conflict with \"{}\" using {}", m.manager, m.api_version),
                   "field": path_string(p)})
        })
        .collect();
    json_response(
        409,
        &json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": "Conflict", "details": {"causes": causes}, "code": 409,
        }),
    )
}

/// Server-side apply of `body` by `manager` onto `live`. Returns the new
/// object (managedFields set) or the conflicts.
fn ssa_apply(
    def: &ResourceDef,
    gv: &str,
    live: &Value,
    body: &Value,
    manager: &str,
    force: bool,
) -> Result<Value, Vec<(Managed, FieldPath)>> {
    let mut entries = managed_of(live);
    let body = owned_part(def, body);
    let mut applied = FieldSet::new();
    collect_fields(&body, &mut Vec::new(), &mut applied);
    let changed = |p: &FieldPath| {
        !matches!(p.last(), Some(Step::Item(_)))
            && value_at(live, p).is_some_and(|lv| value_at(&body, p).is_some_and(|bv| lv != bv))
    };
    let mut conflicts = Vec::new();
    for e in entries.iter().filter(|e| !e.is(manager, "Apply")) {
        for p in applied
            .iter()
            .filter(|p| e.fields.contains(*p) && changed(p))
        {
            conflicts.push((e.clone(), p.clone()));
        }
    }
    if !conflicts.is_empty() && !force {
        return Err(conflicts);
    }
    for e in entries.iter_mut().filter(|e| !e.is(manager, "Apply")) {
        for p in applied.iter().filter(|p| changed(p)) {
            e.fields.remove(p);
        }
    }
    let others: FieldSet = entries
        .iter()
        .filter(|e| !e.is(manager, "Apply"))
        .flat_map(|e| e.fields.iter().cloned())
        .collect();
    let previous: FieldSet = entries
        .iter()
        .filter(|e| e.is(manager, "Apply"))
        .flat_map(|e| e.fields.iter().cloned())
        .collect();
    let mut obj = live.clone();
    // In set order an item comes before its fields: a dropped item goes
    // whole, before its name could be removed from it.
    let dropped = previous
        .iter()
        .filter(|p| !applied.contains(*p) && !others.contains(*p));
    for p in dropped {
        let keeps_item = |item: &[Step]| others.iter().any(|o| o.starts_with(item));
        let is_key = matches!(p.as_slice(), [.., Step::Item(_), Step::Field(f)] if f == "name");
        match p.last() {
            Some(Step::Item(_)) if keeps_item(p) => {}
            _ if is_key && keeps_item(&p[..p.len() - 1]) => {}
            _ => remove_at(&mut obj, p),
        }
    }
    apply_merge(&mut obj, &body);
    let mine = Managed {
        manager: manager.to_string(),
        operation: "Apply".into(),
        api_version: gv.to_string(),
        time: now(),
        subresource: None,
        fields: applied,
    };
    match entries.iter_mut().find(|e| e.is(manager, "Apply")) {
        Some(e) => *e = mine,
        None => entries.push(mine),
    }
    set_managed(&mut obj, entries);
    Ok(obj)
}

/// Records an update by `manager` (POST, PUT, merge patch): it owns what it
/// changed, which no other manager owns any more; removed fields are
/// nobody's. `old` is None for a create.
fn ssa_update(def: &ResourceDef, gv: &str, old: Option<&Value>, new: &mut Value, manager: &str) {
    let mut entries = old.map(managed_of).unwrap_or_default();
    let before = old.map(|o| fields_of(def, o)).unwrap_or_default();
    let after = fields_of(def, new);
    let changed: FieldSet = after
        .iter()
        .filter(|p| match old {
            None => true,
            Some(o) if matches!(p.last(), Some(Step::Item(_))) => {
                !before.contains(*p) || value_at(o, p).is_none()
            }
            Some(o) => value_at(o, p) != value_at(new, p),
        })
        .cloned()
        .collect();
    let removed: Vec<&FieldPath> = before.difference(&after).collect();
    for e in entries.iter_mut() {
        for p in &removed {
            e.fields.remove(*p);
        }
        if !e.is(manager, "Update") {
            for p in &changed {
                e.fields.remove(p);
            }
        }
    }
    if !changed.is_empty() {
        match entries.iter_mut().find(|e| e.is(manager, "Update")) {
            Some(e) => {
                e.fields.extend(changed);
                e.api_version = gv.to_string();
                e.time = now();
            }
            None => entries.push(Managed {
                manager: manager.to_string(),
                operation: "Update".into(),
                api_version: gv.to_string(),
                time: now(),
                subresource: None,
                fields: changed,
            }),
        }
    }
    set_managed(new, entries);
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

/// `plural` or `plural.group`, as Kubernetes names a resource in messages.
fn qualified(def: &ResourceDef) -> String {
    if def.group.is_empty() {
        def.plural.clone()
    } else {
        format!("{}.{}", def.plural, def.group)
    }
}

fn not_found(def: &ResourceDef, name: &str) -> Response {
    let resource = qualified(def);
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
    /// `Accept: ...;as=PartialObjectMetadata[List]`: metadata only.
    meta_only: bool,
}

/// An object as served: whole, or as `PartialObjectMetadata`.
fn present(obj: &Value, gv: &str, kind: &str, meta_only: bool) -> Value {
    let full = render(obj, gv, kind);
    if !meta_only {
        return full;
    }
    json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
           "metadata": full["metadata"].clone()})
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

/// A parsed request, with the identity it runs as.
struct Req {
    method: Method,
    query: BTreeMap<String, String>,
    content_type: String,
    body: Option<Value>,
    id: Identity,
    user_agent: String,
    /// The client asked for `PartialObjectMetadata` (Accept header).
    meta_only: bool,
}

impl Req {
    /// `dryRun=All` in the query, or in the DeleteOptions body of a DELETE.
    fn dry_run(&self) -> bool {
        self.query.get("dryRun").map(String::as_str) == Some("All")
            || (self.method == Method::DELETE
                && self.body.as_ref().is_some_and(|b| {
                    b["dryRun"]
                        .as_array()
                        .is_some_and(|a| a.iter().any(|v| v == "All"))
                }))
    }

    /// The field manager of a non-apply write: `fieldManager`, else the
    /// User-Agent's program name.
    fn update_manager(&self) -> String {
        if let Some(m) = self.query.get("fieldManager").filter(|m| !m.is_empty()) {
            return m.clone();
        }
        let prefix = self.user_agent.split('/').next().unwrap_or_default().trim();
        if prefix.is_empty() {
            "unknown".to_string()
        } else {
            prefix.to_string()
        }
    }
}

fn unauthorized() -> Response {
    status_response(401, "Unauthorized", "Unauthorized")
}

/// The identity of a request: its token, then impersonation.
fn authenticate(st: &Store, headers: &HeaderMap) -> (String, Result<Identity, Response>) {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    let requester = match token {
        None => Identity::admin(),
        Some(t) => match st.tokens.get(t) {
            Some(id) => id.clone(),
            None if st.rbac => return ("system:anonymous".into(), Err(unauthorized())),
            None => Identity {
                user: "system:anonymous".into(),
                groups: vec!["system:unauthenticated".into()],
            },
        },
    };
    let Some(user) = headers
        .get("impersonate-user")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
    else {
        return (requester.user.clone(), Ok(requester));
    };
    let groups: Vec<String> = headers
        .get_all("impersonate-group")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(str::to_string)
        .collect();
    let mut asks = vec![match service_account(&user) {
        Some((ns, name)) => Attrs {
            verb: "impersonate".into(),
            group: String::new(),
            resource: "serviceaccounts".into(),
            subresource: None,
            namespace: Some(ns.to_string()),
            name: Some(name.to_string()),
        },
        None => Attrs {
            verb: "impersonate".into(),
            group: String::new(),
            resource: "users".into(),
            subresource: None,
            namespace: None,
            name: Some(user.clone()),
        },
    }];
    for g in &groups {
        asks.push(Attrs {
            verb: "impersonate".into(),
            group: String::new(),
            resource: "groups".into(),
            subresource: None,
            namespace: None,
            name: Some(g.clone()),
        });
    }
    if let Some(denied) = asks.iter().find(|a| !st.allowed(&requester, a)) {
        return (
            requester.user.clone(),
            Err(forbidden(&requester.user, denied)),
        );
    }
    let id = if groups.is_empty() {
        Identity::of_user(&user)
    } else {
        let mut groups = groups;
        if !groups.iter().any(|g| g == "system:authenticated") {
            groups.push("system:authenticated".into());
        }
        Identity {
            user: user.clone(),
            groups,
        }
    };
    (user, Ok(id))
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
    let header_str = |name: header::HeaderName| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let content_type = header_str(header::CONTENT_TYPE);
    let user_agent = header_str(header::USER_AGENT);
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
    let (identity, delay) = {
        let mut st = app.shared.lock();
        let (user, identity) = authenticate(&st, &headers);
        st.requests.push(Recorded {
            method: method.as_str().to_string(),
            path: path.clone(),
            query: raw_query.clone(),
            headers: hdrs,
            body: body_json.clone(),
            user,
        });
        let mut failed = None;
        for f in st.nth_failures.iter_mut() {
            if f.failure.matches(&method, &path) {
                f.seen += 1;
                if f.seen == f.n && failed.is_none() {
                    failed = Some(error(f.failure.code, &f.failure.message));
                }
            }
        }
        st.nth_failures.retain(|f| f.seen < f.n);
        if failed.is_none()
            && let Some(f) = st.failures.iter().find(|f| f.matches(&method, &path))
        {
            failed = Some(error(f.code, &f.message));
        }
        let delay: Duration = st
            .delays
            .iter()
            .filter(|d| method_matches(&d.method, &method) && path.contains(&d.path_contains))
            .map(|d| d.delay)
            .sum();
        let identity = match failed {
            Some(r) => Err(r),
            None => identity,
        };
        (identity, delay)
    };
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let id = match identity {
        Ok(id) => id,
        Err(r) => return r,
    };
    if !body.is_empty() && body_json.is_none() {
        return error(400, "the request body is not JSON or YAML");
    }
    let req = Req {
        method,
        query,
        content_type,
        body: body_json,
        id,
        user_agent,
        meta_only: header_str(header::ACCEPT).contains("as=PartialObjectMetadata"),
    };
    let step = {
        let mut st = app.shared.lock();
        let write = matches!(
            req.method,
            Method::POST | Method::PUT | Method::PATCH | Method::DELETE
        ) && !req.dry_run();
        match st.crash.as_mut() {
            None => CrashStep::Serve,
            Some(c) if c.crashed => CrashStep::Refuse,
            Some(_) if !write => CrashStep::Serve,
            Some(c) if c.writes_left > 0 => {
                c.writes_left -= 1;
                CrashStep::Serve
            }
            Some(c) => {
                c.crashed = true;
                if c.lose_response {
                    CrashStep::ServeThenLose
                } else {
                    CrashStep::Refuse
                }
            }
        }
    };
    const GONE: &str = "the client crashed (crash_after)";
    if matches!(step, CrashStep::Refuse) {
        return error(500, GONE);
    }

    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let response = match segs.as_slice() {
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
        ["api", v, rest @ ..] => resource_request(&app, &req, "", v, rest).await,
        ["apis", g, v, rest @ ..] => resource_request(&app, &req, g, v, rest).await,
        _ => error(404, "the server could not find the requested resource"),
    };
    match step {
        CrashStep::ServeThenLose => error(500, GONE),
        _ => response,
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

async fn resource_request(
    app: &App,
    req: &Req,
    group: &str,
    version: &str,
    rest: &[&str],
) -> Response {
    let method = &req.method;
    let query = &req.query;
    let meta_only = req.meta_only;
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
    let watching = matches!(query.get("watch").map(String::as_str), Some("true" | "1"));
    let verb = match (method.as_str(), name.is_some()) {
        ("GET", false) if watching => "watch",
        ("GET", false) => "list",
        ("GET", true) => "get",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        (other, _) => other,
    };
    let attrs = Attrs {
        verb: verb.to_string(),
        group: def.group.clone(),
        resource: def.plural.clone(),
        subresource: sub.map(str::to_string),
        namespace: if is_namespace(&def) {
            name.map(str::to_string)
        } else if def.namespaced {
            ns.map(str::to_string)
        } else {
            None
        },
        name: name.map(str::to_string),
    };
    if !app.shared.lock().allowed(&req.id, &attrs) {
        return forbidden(&req.id.user, &attrs);
    }
    let Some(name) = name else {
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
            meta_only,
        };
        return match *method {
            Method::GET => {
                if watching {
                    watch_response(app, &def, &gv, filter, query)
                } else {
                    list_response(app, &def, &gv, &filter, query)
                }
            }
            Method::POST => match ns {
                Some(ns) if def.namespaced => create(app, req, &def, &gv, ns),
                None if !def.namespaced => create(app, req, &def, &gv, ""),
                _ => error(405, "a namespace is required to create this resource"),
            },
            Method::DELETE => delete_collection(app, req, &def, &gv, &filter),
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
            match st.objects.get(&object_key(&def, &ns, name)) {
                Some(o) => json_response(200, &present(o, &gv, &def.kind, meta_only)),
                None => not_found(&def, name),
            }
        }
        Method::PUT => replace(app, req, &def, &gv, &ns, name, status_sub),
        Method::PATCH => patch(app, req, &def, &gv, &ns, name, status_sub),
        Method::DELETE => {
            if status_sub {
                return error(405, "DELETE is not supported on the status subresource");
            }
            delete(app, req, &def, &gv, &ns, name)
        }
        _ => error(405, &format!("{method} is not supported")),
    }
}

/// A list, in pages of `limit` items when asked (`continue` is the hex of
/// the last key served: later pages see later writes, unlike Kubernetes'
/// snapshot, which no test relies on).
fn list_response(
    app: &App,
    def: &ResourceDef,
    gv: &str,
    filter: &Filter,
    query: &BTreeMap<String, String>,
) -> Response {
    let limit = query
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0);
    let after: Option<String> = query
        .get("continue")
        .filter(|c| !c.is_empty())
        .and_then(|c| {
            let bytes: Option<Vec<u8>> = (0..c.len())
                .step_by(2)
                .map(|i| c.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
                .collect();
            String::from_utf8(bytes?).ok()
        });
    let st = app.shared.lock();
    let mut items = Vec::new();
    let mut next = None;
    for (k, o) in st.objects.iter() {
        if !filter.matches(&k.0, &k.1, &k.2, o) {
            continue;
        }
        let key = format!("{}/{}", k.2, k.3);
        if after.as_ref().is_some_and(|a| key.as_str() <= a.as_str()) {
            continue;
        }
        if limit.is_some_and(|l| items.len() == l) {
            next = Some(items.len());
            break;
        }
        items.push((key, present(o, gv, &def.kind, filter.meta_only)));
    }
    let mut metadata = json!({"resourceVersion": st.rv.to_string()});
    if next.is_some()
        && let Some((last, _)) = items.last()
    {
        let token: String = last.bytes().map(|b| format!("{b:02x}")).collect();
        metadata["continue"] = json!(token);
    }
    let items: Vec<Value> = items.into_iter().map(|(_, v)| v).collect();
    let kind = if filter.meta_only {
        "PartialObjectMetadataList".to_string()
    } else {
        format!("{}List", def.kind)
    };
    let api_version = if filter.meta_only {
        "meta.k8s.io/v1"
    } else {
        gv
    };
    json_response(
        200,
        &json!({"kind": kind, "apiVersion": api_version, "metadata": metadata, "items": items}),
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
                    initial.push_back(event_line(
                        ev.kind,
                        &present(&ev.object, gv, &def.kind, filter.meta_only),
                    ));
                }
            }
        }
        _ => {
            for (k, o) in &st.objects {
                if filter.matches(&k.0, &k.1, &k.2, o) {
                    initial.push_back(event_line(
                        "ADDED",
                        &present(o, gv, &def.kind, filter.meta_only),
                    ));
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
                            let line = event_line(
                                ev.kind,
                                &present(&ev.object, &s.gv, &s.kind, s.filter.meta_only),
                            );
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

/// How a create records field ownership.
enum CreateOp<'a> {
    Update(&'a str),
    Apply(&'a str),
}

fn do_create(
    st: &mut Store,
    req: &Req,
    def: &ResourceDef,
    gv: &str,
    ns: &str,
    mut obj: Value,
    op: CreateOp,
) -> Response {
    let Some(name) = obj["metadata"]["name"].as_str().map(str::to_string) else {
        return error(422, "metadata.name: Required value: name is required");
    };
    let key = object_key(def, ns, &name);
    if st.objects.contains_key(&key) {
        let resource = qualified(def);
        return status_response(
            409,
            "AlreadyExists",
            &format!("{resource} \"{name}\" already exists"),
        );
    }
    if st.ns_lifecycle && def.namespaced {
        let ns_key: Key = (String::new(), "namespaces".into(), String::new(), ns.into());
        match st.objects.get(&ns_key) {
            None => {
                return status_response(404, "NotFound", &format!("namespaces \"{ns}\" not found"));
            }
            Some(n) if is_deleting(n) => {
                return status_response(
                    403,
                    "Forbidden",
                    &format!(
                        "{} \"{name}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
                        qualified(def)
                    ),
                );
            }
            Some(_) => {}
        }
    }
    strip_server_fields(&mut obj);
    if def.status {
        set_or_remove_status(&mut obj, None);
    }
    match op {
        CreateOp::Update(manager) => ssa_update(def, gv, None, &mut obj, manager),
        CreateOp::Apply(manager) => {
            let fields = fields_of(def, &obj);
            set_managed(
                &mut obj,
                vec![Managed {
                    manager: manager.to_string(),
                    operation: "Apply".into(),
                    api_version: gv.to_string(),
                    time: now(),
                    subresource: None,
                    fields,
                }],
            );
        }
    }
    let uid = st.next_uid();
    set_meta(&mut obj, "uid", Value::String(uid));
    set_meta(&mut obj, "creationTimestamp", Value::String(now()));
    let stored = st.write_opt(def, ns, &name, obj, req.dry_run());
    json_response(201, &render(&stored, gv, &def.kind))
}

fn create(app: &App, req: &Req, def: &ResourceDef, gv: &str, ns: &str) -> Response {
    let Some(body) = req.body.clone() else {
        return error(400, "a body is required");
    };
    if let Err(r) = check_body(def, ns, None, &body) {
        return *r;
    }
    let manager = req.update_manager();
    let mut st = app.shared.lock();
    do_create(&mut st, req, def, gv, ns, body, CreateOp::Update(&manager))
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
    req: &Req,
    def: &ResourceDef,
    gv: &str,
    ns: &str,
    name: &str,
    status_sub: bool,
) -> Response {
    let Some(body) = req.body.clone() else {
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
        ssa_update(def, gv, Some(&old), &mut n, &req.update_manager());
        n
    };
    let stored = st.write_opt(def, ns, name, new, req.dry_run());
    json_response(200, &render(&stored, gv, &def.kind))
}

fn patch(
    app: &App,
    req: &Req,
    def: &ResourceDef,
    gv: &str,
    ns: &str,
    name: &str,
    status_sub: bool,
) -> Response {
    let query = &req.query;
    let content_type = req.content_type.as_str();
    let Some(body) = req.body.clone() else {
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
    let apply_manager = query.get("fieldManager").cloned().filter(|m| !m.is_empty());
    if apply && apply_manager.is_none() {
        return error(
            422,
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
        );
    }
    let apply_manager = apply_manager.unwrap_or_default();
    let force = query.get("force").map(String::as_str) == Some("true");
    let dry = req.dry_run();
    let mut st = app.shared.lock();
    if apply
        && st.service_port_protocol_required
        && def.group.is_empty()
        && def.kind == "Service"
        && let Some(i) = body
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .and_then(|ports| ports.iter().position(|p| p.get("protocol").is_none()))
    {
        return error(
            500,
            &format!(
                "failed to create typed patch object: .spec.ports: element {i}: associative list with keys has an element that omits key field \"protocol\" (and doesn't have default value)"
            ),
        );
    }
    let key = object_key(def, ns, name);
    let old = st.objects.get(&key).cloned();
    let Some(old) = old else {
        if apply && !status_sub {
            let attrs = Attrs {
                verb: "create".into(),
                group: def.group.clone(),
                resource: def.plural.clone(),
                subresource: None,
                namespace: if def.namespaced {
                    Some(ns.to_string())
                } else if is_namespace(def) {
                    Some(name.to_string())
                } else {
                    None
                },
                name: Some(name.to_string()),
            };
            if !st.allowed(&req.id, &attrs) {
                return forbidden(&req.id.user, &attrs);
            }
            let mut obj = body;
            set_meta(&mut obj, "name", Value::String(name.to_string()));
            return do_create(
                &mut st,
                req,
                def,
                gv,
                ns,
                obj,
                CreateOp::Apply(&apply_manager),
            );
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
        let mut body = body;
        strip_server_fields(&mut body);
        let mut n = match ssa_apply(def, gv, &old, &body, &apply_manager, force) {
            Ok(n) => n,
            Err(conflicts) => return apply_conflict(&conflicts),
        };
        if body["metadata"].get("finalizers").is_none() {
            match old["metadata"].get("finalizers") {
                Some(f) => set_meta(&mut n, "finalizers", f.clone()),
                None => {
                    remove_meta(&mut n, "finalizers");
                }
            }
        }
        if def.status {
            set_or_remove_status(&mut n, old.get("status").cloned());
        }
        n
    } else {
        let mut n = old.clone();
        merge_patch(&mut n, &body);
        match old["metadata"].get("managedFields") {
            Some(mf) => set_meta(&mut n, "managedFields", mf.clone()),
            None => {
                remove_meta(&mut n, "managedFields");
            }
        }
        if def.status {
            set_or_remove_status(&mut n, old.get("status").cloned());
        }
        ssa_update(def, gv, Some(&old), &mut n, &req.update_manager());
        n
    };
    let stored = st.write_opt(def, ns, name, new, dry);
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

fn delete(app: &App, req: &Req, def: &ResourceDef, gv: &str, ns: &str, name: &str) -> Response {
    let mut st = app.shared.lock();
    let key = object_key(def, ns, name);
    match st.delete_object(def, &key, req.dry_run()) {
        Some(o) => json_response(200, &render(&o, gv, &def.kind)),
        None => not_found(def, name),
    }
}

fn delete_collection(
    app: &App,
    req: &Req,
    def: &ResourceDef,
    gv: &str,
    filter: &Filter,
) -> Response {
    let mut st = app.shared.lock();
    let keys: Vec<Key> = st
        .objects
        .iter()
        .filter(|(k, o)| filter.matches(&k.0, &k.1, &k.2, o))
        .map(|(k, _)| k.clone())
        .collect();
    let items: Vec<Value> = keys
        .iter()
        .filter_map(|k| st.delete_object(def, k, req.dry_run()))
        .map(|o| render(&o, gv, &def.kind))
        .collect();
    json_response(
        200,
        &json!({"kind": format!("{}List", def.kind), "apiVersion": gv,
                "metadata": {"resourceVersion": st.rv.to_string()}, "items": items}),
    )
}
