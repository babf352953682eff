//! Kubernetes Events about Kustomizations, written as core `v1` Events.
//!
//! Why not `kube::runtime::events::Recorder`: it writes `events.k8s.io/v1`
//! Events, which cost the API server about twice the CPU of a core `v1`
//! Event for the same content (measured with `bench/requests.py`: 3.3-3.8
//! against 1.3-1.6 ms on the reference API server). A first apply writes
//! one Event, so that difference was several percent of a converge. Both
//! kinds are the same objects in the API server: `kubectl describe` and
//! `kubectl events` show either.
//!
//! An Event repeated with the same type, reason and message about the same
//! object within [`REPEAT_WINDOW`] is counted on the Event already written
//! (`count`, `lastTimestamp`) instead of written again, as client-go's
//! recorder does. The memory of written Events is bounded by
//! [`MAX_REMEMBERED`] entries.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Client;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};

/// How long a written Event is counted on rather than written again.
pub const REPEAT_WINDOW: Duration = Duration::from_secs(10 * 60);

/// Written Events remembered at most (older ones are forgotten first).
pub const MAX_REMEMBERED: usize = 10_000;

/// Longest message written (the API server refuses more than 1 KiB in an
/// `events.k8s.io` note; core Events are held to the same length).
const MAX_MESSAGE_CHARS: usize = 1000;

/// `Normal` or `Warning`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventType {
    Normal,
    Warning,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    namespace: String,
    name: String,
    uid: String,
    type_: EventType,
    reason: String,
    message: String,
}

#[derive(Clone, Debug)]
struct Written {
    /// The Event's name.
    name: String,
    count: i32,
    at: Instant,
}

/// Writes Events as the component `krmsync` (instance: the pod's name when
/// known).
pub struct EventWriter {
    client: Client,
    instance: Option<String>,
    written: Mutex<HashMap<Key, Written>>,
}

impl EventWriter {
    pub fn new(client: Client, instance: Option<String>) -> EventWriter {
        EventWriter {
            client,
            instance,
            written: Mutex::new(HashMap::new()),
        }
    }

    /// Writes an Event about `about` (a namespaced object), or counts it on
    /// the same Event written less than [`REPEAT_WINDOW`] ago.
    pub async fn publish(
        &self,
        about: &ObjectReference,
        type_: EventType,
        reason: &str,
        message: &str,
        action: &str,
    ) -> Result<(), kube::Error> {
        let message: String = message.chars().take(MAX_MESSAGE_CHARS).collect();
        let namespace = about.namespace.clone().unwrap_or_else(|| "default".into());
        let key = Key {
            namespace: namespace.clone(),
            name: about.name.clone().unwrap_or_default(),
            uid: about.uid.clone().unwrap_or_default(),
            type_,
            reason: reason.to_string(),
            message: message.clone(),
        };
        let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        let now = Instant::now();
        let repeat = self.remembered(&key, now);
        let stamp = Time(k8s_openapi::jiff::Timestamp::now());
        if let Some(w) = repeat {
            let count = w.count + 1;
            let patch = serde_json::json!({"count": count, "lastTimestamp": stamp});
            match api
                .patch(&w.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {
                    self.remember(
                        key,
                        Written {
                            count,
                            at: now,
                            ..w
                        },
                        now,
                    );
                    return Ok(());
                }
                // expired (the API server keeps Events for an hour by
                // default) or deleted: written anew below
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        let name = format!(
            "{}.{:x}",
            about.name.as_deref().unwrap_or("krmsync"),
            stamp.0.as_nanosecond()
        );
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace),
                ..Default::default()
            },
            involved_object: about.clone(),
            type_: Some(type_.as_str().into()),
            reason: Some(reason.into()),
            message: Some(message),
            action: Some(action.into()),
            count: Some(1),
            first_timestamp: Some(stamp.clone()),
            last_timestamp: Some(stamp),
            source: Some(EventSource {
                component: Some("krmsync".into()),
                host: None,
            }),
            reporting_component: Some("krmsync".into()),
            reporting_instance: Some(
                self.instance
                    .clone()
                    .unwrap_or_else(|| "krmsync".to_string()),
            ),
            ..Default::default()
        };
        api.create(&PostParams::default(), &event).await?;
        self.remember(
            key,
            Written {
                name,
                count: 1,
                at: now,
            },
            now,
        );
        Ok(())
    }

    /// The Event written for `key` within the repeat window, if any.
    fn remembered(&self, key: &Key, now: Instant) -> Option<Written> {
        let written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        written
            .get(key)
            .filter(|w| now.duration_since(w.at) < REPEAT_WINDOW)
            .cloned()
    }

    fn remember(&self, key: Key, w: Written, now: Instant) {
        let mut written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        if written.len() >= MAX_REMEMBERED && !written.contains_key(&key) {
            written.retain(|_, w| now.duration_since(w.at) < REPEAT_WINDOW);
            if written.len() >= MAX_REMEMBERED
                && let Some(oldest) = written
                    .iter()
                    .min_by_key(|(_, w)| w.at)
                    .map(|(k, _)| k.clone())
            {
                written.remove(&oldest);
            }
        }
        written.insert(key, w);
    }

    /// Events remembered (for tests).
    pub fn remembered_len(&self) -> usize {
        self.written.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}
