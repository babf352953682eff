//! Events about Kustomizations (`controller::events`) against the
//! in-memory API server: core `v1` Events, repeats counted on the Event
//! already written, a changed message written anew.

mod support;

use k8s_openapi::api::core::v1::{Event, ObjectReference};
use kube::Api;
use kube::api::DeleteParams;
use serde_json::{Value, json};
use support::FakeApi;

use krmsync::controller::events::{EventType, EventWriter};

const NS: &str = "apps";

fn about(name: &str, uid: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("krmsync.dev/v1alpha1".into()),
        kind: Some("Kustomization".into()),
        name: Some(name.into()),
        namespace: Some(NS.into()),
        uid: Some(uid.into()),
        ..Default::default()
    }
}

async fn fake() -> FakeApi {
    let fake = FakeApi::start().await;
    fake.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}));
    fake
}

fn events(fake: &FakeApi) -> Vec<Value> {
    let mut v = fake.list("v1", "Event");
    v.sort_by_key(|e| {
        e["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    });
    v
}

async fn applied(w: &EventWriter, k: &ObjectReference) -> Result<(), kube::Error> {
    w.publish(k, EventType::Normal, "Applied", "done", "Reconcile")
        .await
}

#[tokio::test]
async fn an_event_is_a_core_event_about_its_object() {
    let fake = fake().await;
    let w = EventWriter::new(fake.client(), Some("krmsync-0".into()));
    w.publish(
        &about("app", "u-1"),
        EventType::Normal,
        "Applied",
        "Revision sha256:1: 3 created",
        "Reconcile",
    )
    .await
    .unwrap();
    let evs = events(&fake);
    assert_eq!(evs.len(), 1, "{evs:#?}");
    let e = &evs[0];
    assert_eq!(e["apiVersion"], "v1");
    assert_eq!(e["type"], "Normal");
    assert_eq!(e["reason"], "Applied");
    assert_eq!(e["message"], "Revision sha256:1: 3 created");
    assert_eq!(e["count"], 1);
    assert_eq!(e["involvedObject"]["kind"], "Kustomization");
    assert_eq!(e["involvedObject"]["name"], "app");
    assert_eq!(e["involvedObject"]["uid"], "u-1");
    assert_eq!(e["metadata"]["namespace"], NS);
    assert_eq!(e["source"]["component"], "krmsync");
    assert_eq!(e["reportingComponent"], "krmsync");
    assert_eq!(e["reportingInstance"], "krmsync-0");
    assert!(
        e["metadata"]["name"].as_str().unwrap().starts_with("app."),
        "{e}"
    );
    assert_eq!(e["firstTimestamp"], e["lastTimestamp"]);
    // nothing goes through events.k8s.io
    assert!(fake.list("events.k8s.io/v1", "Event").is_empty());
    assert!(
        fake.requests()
            .iter()
            .all(|r| !r.path.contains("events.k8s.io")),
    );
}

#[tokio::test]
async fn a_repeated_event_is_counted_and_a_changed_one_written_anew() {
    let fake = fake().await;
    let w = EventWriter::new(fake.client(), None);
    let k = about("app", "u-1");
    for _ in 0..3 {
        w.publish(
            &k,
            EventType::Warning,
            "RenderFailed",
            "bad patch",
            "Reconcile",
        )
        .await
        .unwrap();
    }
    let evs = events(&fake);
    assert_eq!(evs.len(), 1, "{evs:#?}");
    assert_eq!(evs[0]["count"], 3);
    assert_eq!(evs[0]["message"], "bad patch");
    assert_eq!(evs[0]["reportingInstance"], "krmsync");

    // another message, reason, type or object (a Kustomization deleted and
    // created again under its name is another object): an Event of its
    // own, whose message is the new one
    for (obj, type_, reason, message) in [
        (k.clone(), EventType::Warning, "RenderFailed", "worse patch"),
        (k.clone(), EventType::Warning, "ApplyFailed", "bad patch"),
        (k.clone(), EventType::Normal, "RenderFailed", "bad patch"),
        (
            about("other", "u-2"),
            EventType::Warning,
            "RenderFailed",
            "bad patch",
        ),
        (
            about("app", "u-3"),
            EventType::Warning,
            "RenderFailed",
            "bad patch",
        ),
    ] {
        w.publish(&obj, type_, reason, message, "Reconcile")
            .await
            .unwrap();
    }
    let evs = events(&fake);
    assert_eq!(evs.len(), 6, "{evs:#?}");
    assert!(
        evs.iter()
            .any(|e| e["message"] == "worse patch" && e["count"] == 1)
    );
    assert_eq!(
        evs.iter().filter(|e| e["count"] == 3).count(),
        1,
        "{evs:#?}"
    );
    assert_eq!(w.remembered_len(), 6);
}

#[tokio::test]
async fn a_repeat_of_an_expired_event_writes_it_again() {
    let fake = fake().await;
    let w = EventWriter::new(fake.client(), None);
    let k = about("app", "u-1");
    applied(&w, &k).await.unwrap();
    // the API server let it expire
    let name = events(&fake)[0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let api: Api<Event> = Api::namespaced(fake.client(), NS);
    api.delete(&name, &DeleteParams::default()).await.unwrap();
    assert!(events(&fake).is_empty());

    applied(&w, &k).await.unwrap();
    let evs = events(&fake);
    assert_eq!(evs.len(), 1, "{evs:#?}");
    assert_eq!(evs[0]["count"], 1);
    // and counted on from there
    applied(&w, &k).await.unwrap();
    assert_eq!(events(&fake)[0]["count"], 2);
}

#[tokio::test]
async fn a_refused_event_is_an_error_and_not_remembered() {
    let fake = fake().await;
    let w = EventWriter::new(fake.client(), None);
    let k = about("app", "u-1");
    fake.fail("POST", "/events", 403, "forbidden");
    let err = applied(&w, &k).await.unwrap_err();
    assert!(err.to_string().contains("forbidden"), "{err}");
    assert_eq!(w.remembered_len(), 0);
    fake.clear_failures();
    applied(&w, &k).await.unwrap();
    assert_eq!(events(&fake).len(), 1);
    assert_eq!(events(&fake)[0]["count"], 1);
}

#[tokio::test]
async fn long_messages_are_cut_to_a_thousand_characters() {
    let fake = fake().await;
    let w = EventWriter::new(fake.client(), None);
    let long = "é".repeat(1500);
    w.publish(
        &about("app", "u-1"),
        EventType::Warning,
        "RenderFailed",
        &long,
        "Reconcile",
    )
    .await
    .unwrap();
    let m = events(&fake)[0]["message"].as_str().unwrap().to_string();
    assert_eq!(m.chars().count(), 1000);
}
