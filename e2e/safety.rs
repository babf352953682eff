//! End-to-end tests of the controller's safety guarantees: the multi-tenant
//! lockdown, one owner per object, adopted Namespaces surviving, a SIGKILL
//! between apply and status, and namespace deletion.

use serde_json::Value;

use crate::common::*;

const KS: &str = "kustomizations.krmsync.dev";

fn cm(name: &str, namespace: Option<&str>) -> String {
    let ns = namespace
        .map(|n| format!("  namespace: {n}\n"))
        .unwrap_or_default();
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n{ns}data:\n  k: v\n")
}

/// With the controller running as its own ServiceAccount bound only to the
/// ClusterRole of `config/rbac` (no applier binding) and
/// `--require-service-account`, a tenant can write outside its namespace
/// neither without nor with a ServiceAccount.
#[test]
#[ignore = "needs a cluster (KUBECONFIG)"]
fn lockdown_keeps_a_tenant_in_its_namespace() {
    if !cluster_available() {
        return;
    }
    let other = Namespace::create();
    let mut identity = None;
    let Some(mut e) = E2e::setup_with(|ns| {
        let id = ControllerIdentity::create(ns);
        let c = Controller::start_with(ns, &["--require-service-account"], Some(&id.kubeconfig));
        identity = Some(id);
        c
    }) else {
        return;
    };
    let ns = e.ns().to_string();
    let escaping = [
        (
            "kustomization.yaml",
            "resources: [mine.yaml, theirs.yaml]\n".to_string(),
        ),
        ("mine.yaml", cm("mine", None)),
        ("theirs.yaml", cm("planted", Some(&other.name))),
    ];
    let files: Vec<(&str, &str)> = escaping.iter().map(|(a, b)| (*a, b.as_str())).collect();
    push_bundle(&ns, "escape", &files);

    // without a ServiceAccount
    e.apply_kustomization("no-sa", &bundle_spec("escape", ""));
    e.wait_not_ready("no-sa", "ServiceAccountRequired");

    // with a ServiceAccount that is admin of its namespace only
    tenant_service_account(&ns, "deployer");
    e.apply_kustomization(
        "with-sa",
        &bundle_spec("escape", "serviceAccountName: deployer\n"),
    );
    let k = e.wait_not_ready("with-sa", "ApplyFailed");
    println!("{}", status_summary(&k));
    assert!(get_json(&["configmap", "planted", "-n", &other.name]).is_none());
    assert!(
        get_json(&["configmap", "mine", "-n", &ns]).is_none(),
        "dry-run: nothing applied"
    );

    // inside its namespace it works
    push_bundle(
        &ns,
        "inside",
        &[
            ("kustomization.yaml", "resources: [mine.yaml]\n"),
            ("mine.yaml", &cm("mine", None)),
        ],
    );
    e.apply_kustomization(
        "inside",
        &bundle_spec("inside", "serviceAccountName: deployer\n"),
    );
    e.wait_ready("inside", |_| true);
    assert_owned_by(
        &get_json(&["configmap", "mine", "-n", &ns]).unwrap(),
        &ns,
        "inside",
    );
    drop(e);
    drop(identity);
}

/// Two Kustomizations rendering the same object: the second is refused
/// with OwnershipConflict, and deleting it leaves the object alone.
#[test]
#[ignore = "needs a cluster (KUBECONFIG)"]
fn ownership_conflicts_are_refused() {
    let Some(mut e) = E2e::setup() else { return };
    let ns = e.ns().to_string();
    push_bundle(
        &ns,
        "first",
        &[
            ("kustomization.yaml", "resources: [cm.yaml]\n"),
            ("cm.yaml", &cm("shared", None)),
        ],
    );
    push_bundle(
        &ns,
        "second",
        &[
            ("kustomization.yaml", "resources: [cm.yaml]\n"),
            ("cm.yaml", &cm("shared", None)),
        ],
    );
    e.apply_kustomization("first", &bundle_spec("first", ""));
    e.wait_ready("first", |_| true);
    refused_for_ownership_then_deleted(&mut e, "second", "first");
    let shared = get_json(&["configmap", "shared", "-n", &ns]).expect("kept");
    assert_owned_by(&shared, &ns, "first");
}

/// Creates the Kustomization `name` (of the bundle `name`), waits until it
/// is refused with `OwnershipConflict` naming `owner`, and deletes it.
fn refused_for_ownership_then_deleted(e: &mut E2e, name: &str, owner: &str) {
    let ns = e.ns().to_string();
    e.apply_kustomization(name, &bundle_spec(name, ""));
    let k = e.wait_not_ready(name, "OwnershipConflict");
    let (_, _, message) = condition(&k, "Ready").unwrap();
    assert!(
        message.contains(&format!("Kustomization {ns}/{owner}")),
        "{message}"
    );
    kubectl(&[
        "delete",
        KS,
        name,
        "-n",
        &ns,
        "--wait=true",
        "--timeout=60s",
    ]);
}

/// An object handed over with `krmsync.dev/adopt` is skipped by its
/// previous owner (which records it in `status.handedOver`) and refused to
/// any other, and deleted by the new one when its revision drops it
/// (krmsync created it); a pre-existing object handed over the same way is
/// released instead.
#[test]
#[ignore = "needs a cluster (KUBECONFIG)"]
fn a_handed_over_object_is_deleted_by_its_new_owner_only_if_krmsync_created_it() {
    let Some(mut e) = E2e::setup() else { return };
    let ns = e.ns().to_string();
    kubectl_apply(&format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pre\n  namespace: {ns}\ndata:\n  k: before\n"
    ));
    let two = "resources: [moving.yaml, pre.yaml]\n";
    push_bundle(
        &ns,
        "old",
        &[
            ("kustomization.yaml", two),
            ("moving.yaml", &cm("moving", None)),
            ("pre.yaml", &cm("pre", None)),
        ],
    );
    e.apply_kustomization("old", &bundle_spec("old", ""));
    e.wait_ready("old", |_| true);

    let adopting = |name: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  annotations:\n    krmsync.dev/adopt: \"true\"\ndata:\n  k: new\n"
        )
    };
    push_bundle(
        &ns,
        "new",
        &[
            ("kustomization.yaml", two),
            ("moving.yaml", &adopting("moving")),
            ("pre.yaml", &adopting("pre")),
        ],
    );
    e.apply_kustomization("new", &bundle_spec("new", ""));
    let first = e.wait_ready("new", |_| true);
    let first = str_at(&first, "/status/lastAppliedRevision").unwrap();
    for name in ["moving", "pre"] {
        assert_owned_by(
            &get_json(&["configmap", name, "-n", &ns]).unwrap(),
            &ns,
            "new",
        );
    }
    e.request_reconcile("old");
    let old = e.wait_for("old to report the hand-over", || {
        let k = get_json(&[KS, "old", "-n", &ns]).ok_or("old is gone")?;
        let (status, _, message) = condition(&k, "Applied").ok_or("no Applied condition")?;
        if status == "True" && message.contains("handed over") {
            Ok(k)
        } else {
            Err(message)
        }
    });
    // what it handed over is in its status (the CRD's schema keeps the
    // field), so the reconciles after it skip the objects the same way
    let handed = old.pointer("/status/handedOver/entries").cloned();
    assert!(
        handed
            .as_ref()
            .and_then(|h| h.as_array())
            .is_some_and(|h| h.len() == 2),
        "status.handedOver: {handed:?}"
    );
    // a Kustomization that never held the object is refused for it
    push_bundle(
        &ns,
        "bystander",
        &[
            ("kustomization.yaml", "resources: [moving.yaml]\n"),
            ("moving.yaml", &cm("moving", None)),
        ],
    );
    refused_for_ownership_then_deleted(&mut e, "bystander", "new");

    push_bundle(&ns, "new", &[("kustomization.yaml", "resources: []\n")]);
    e.wait_ready("new", |r| r != first);
    e.wait_gone("configmap", "moving");
    let pre = get_json(&["configmap", "pre", "-n", &ns]).expect("the pre-existing object is kept");
    assert_eq!(label(&pre, "krmsync.dev/name"), None, "released: {pre}");
}

/// A Namespace that existed before the Kustomization rendered it survives
/// the Kustomization's deletion (even with deleteNamespacesAndCRDs).
#[test]
#[ignore = "needs a cluster (KUBECONFIG)"]
fn an_adopted_namespace_survives_deletion() {
    let Some(mut e) = E2e::setup() else { return };
    let ns = e.ns().to_string();
    let adopted = Namespace::create();
    let nsyaml = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {}\n",
        adopted.name
    );
    push_bundle(
        &ns,
        "app",
        &[
            ("kustomization.yaml", "resources: [ns.yaml, cm.yaml]\n"),
            ("ns.yaml", &nsyaml),
            ("cm.yaml", &cm("inside", Some(&adopted.name))),
        ],
    );
    e.apply_kustomization(
        "app",
        &bundle_spec("app", "deleteNamespacesAndCRDs: true\n"),
    );
    e.wait_ready("app", |_| true);
    kubectl(&[
        "delete",
        KS,
        "app",
        "-n",
        &ns,
        "--wait=true",
        "--timeout=60s",
    ]);
    let n = get_json(&["namespace", &adopted.name]).expect("the adopted Namespace survives");
    assert!(
        n.pointer("/metadata/deletionTimestamp").is_none(),
        "{}",
        n["metadata"]
    );
    assert_eq!(label(&n, "krmsync.dev/name"), None, "released");
    let inside = adopted.name.clone();
    e.wait_for(
        "the ConfigMap krmsync created to be deleted",
        || match get_json(&["configmap", "inside", "-n", &inside]) {
            None => Ok(()),
            Some(o) if o.pointer("/metadata/deletionTimestamp").is_some() => Ok(()),
            Some(_) => Err("still present".to_string()),
        },
    );
}

fn owned_configmaps(ns: &str, owner: &str) -> Vec<String> {
    let list = get_json(&[
        "configmaps",
        "-n",
        ns,
        "-l",
        &format!("krmsync.dev/name={owner}"),
    ])
    .unwrap_or(Value::Null);
    let mut names: Vec<String> = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_string))
        .collect();
    names.sort();
    names
}

/// SIGKILL while a revision is being applied, before its status is
/// written: after the next revision nothing of the Kustomization exists
/// that its render does not contain.
#[test]
#[ignore = "needs a cluster (KUBECONFIG)"]
fn sigkill_between_apply_and_status_leaks_nothing() {
    sigkill_midway(false);
}

/// The same on a first apply: nothing in status names the objects, only the
/// pending inventory written with the finalizer does.
#[test]
#[ignore = "needs a cluster (KUBECONFIG)"]
fn sigkill_during_a_first_apply_leaks_nothing() {
    sigkill_midway(true);
}

/// Kills the controller while it applies many ConfigMaps (the first
/// revision when `first_apply`, else the second after one of `a`), then
/// applies a revision of `a` only with a new controller.
fn sigkill_midway(first_apply: bool) {
    // a first apply creates new ConfigMaps without dry-runs, fast: more of
    // them, one request at a time, so that the kill comes before the status
    let (count, concurrency) = if first_apply {
        (1000, "1")
    } else {
        (200, "32")
    };
    let Some(mut e) = E2e::setup_with(|ns| {
        Controller::start_with(
            ns,
            &["--allow-insecure-sources", "--api-concurrency", concurrency],
            None,
        )
    }) else {
        return;
    };
    let ns = e.ns().to_string();
    if !first_apply {
        push_bundle(
            &ns,
            "app",
            &[
                ("kustomization.yaml", "resources: [a.yaml]\n"),
                ("a.yaml", &cm("a", None)),
            ],
        );
        e.apply_kustomization("app", &bundle_spec("app", ""));
        e.wait_ready("app", |_| true);
    }

    let names: Vec<String> = (0..count).map(|i| format!("bulk-{i:04}")).collect();
    let mut files = vec![
        (
            "kustomization.yaml".to_string(),
            format!(
                "resources: [a.yaml, {}]\n",
                names
                    .iter()
                    .map(|n| format!("{n}.yaml"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
        ("a.yaml".to_string(), cm("a", None)),
    ];
    files.extend(names.iter().map(|n| (format!("{n}.yaml"), cm(n, None))));
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    push_bundle(&ns, "app", &refs);
    if first_apply {
        e.apply_kustomization("app", &bundle_spec("app", ""));
    } else {
        e.request_reconcile("app");
    }
    e.wait_for("the new revision to start applying", || {
        let n = owned_configmaps(&ns, "app").len();
        if n > 1 {
            Ok(())
        } else {
            Err(format!("{n} owned ConfigMaps"))
        }
    });
    e.controller.kill();
    let k = get_json(&[KS, "app", "-n", &ns]).unwrap();
    let applied = owned_configmaps(&ns, "app").len();
    println!(
        "killed with {applied} of {} applied; status: {}",
        count + 1,
        status_summary(&k)
    );
    if first_apply {
        assert!(
            k["status"]["inventory"].is_null(),
            "the kill came after the status write: {}",
            k["status"]
        );
    }

    push_bundle(
        &ns,
        "app",
        &[
            ("kustomization.yaml", "resources: [a.yaml]\n"),
            ("a.yaml", &cm("a", None)),
        ],
    );
    e.controller = Controller::start(&ns);
    e.request_reconcile("app");
    e.wait_for("only the new revision's objects", || {
        let owned = owned_configmaps(&ns, "app");
        if owned == vec!["a".to_string()] {
            Ok(())
        } else {
            Err(format!(
                "{} owned: {:?}",
                owned.len(),
                owned.iter().take(5).collect::<Vec<_>>()
            ))
        }
    });
}

/// Deleting the namespace of a Kustomization that acts as a ServiceAccount
/// of that namespace: the namespace goes away (the finalizer is released
/// once the ServiceAccount can no longer act).
#[test]
#[ignore = "needs a cluster (KUBECONFIG)"]
fn deleting_the_namespace_does_not_hang() {
    if !cluster_available() {
        return;
    }
    let tenant = Namespace::create();
    let mut e = E2e::setup_with(|_| {
        Controller::start_with(&tenant.name, &["--require-service-account"], None)
    })
    .expect("cluster available");
    tenant_service_account(&tenant.name, "deployer");
    push_bundle(
        &tenant.name,
        "app",
        &[
            ("kustomization.yaml", "resources: [cm.yaml]\n"),
            ("cm.yaml", &cm("x", None)),
        ],
    );
    kubectl_apply(&format!(
        "apiVersion: krmsync.dev/v1alpha1\nkind: Kustomization\nmetadata:\n  name: app\n  namespace: {}\nspec:\n  source:\n    bundle:\n      configMapRef:\n        name: app\n  serviceAccountName: deployer\n  interval: 1h\n",
        tenant.name
    ));
    let t = tenant.name.clone();
    e.wait_for("the tenant's Kustomization Ready", || {
        let k = get_json(&[KS, "app", "-n", &t]).ok_or("missing")?;
        match condition(&k, "Ready") {
            Some((s, _, _)) if s == "True" => Ok(()),
            _ => Err(status_summary(&k)),
        }
    });
    kubectl(&["delete", "namespace", &t, "--wait=false"]);
    e.wait_for("the namespace to be gone", || {
        match get_json(&["namespace", &t]) {
            None => Ok(()),
            Some(n) => Err(format!("{}", n["status"])),
        }
    });
}

/// Self-healing against a real API server: with `interval: 1h`, a
/// ConfigMap deleted with kubectl, and one whose data another manager
/// overwrites, are restored within 15 s (the controller watches the
/// applied kinds).
#[test]
#[ignore = "needs a cluster (KUBECONFIG)"]
fn deleted_and_edited_objects_heal_within_seconds() {
    let Some(mut e) = E2e::setup() else { return };
    let ns = e.ns().to_string();
    push_bundle(
        &ns,
        "heal",
        &[
            ("kustomization.yaml", &kustomization_yaml(&["cm.yaml"])),
            ("cm.yaml", &configmap_yaml("healed", "k", "v1")),
        ],
    );
    e.apply_kustomization("heal", &bundle_spec("heal", ""));
    e.wait_ready("heal", |_| true);
    let value =
        |ns: &str| get_json(&["configmap", "healed", "-n", ns]).and_then(|c| str_at(&c, "/data/k"));
    kubectl(&["delete", "configmap", "healed", "-n", &ns, "--wait=true"]);
    let started = std::time::Instant::now();
    while value(&ns).is_none() && started.elapsed() < std::time::Duration::from_secs(15) {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(
        value(&ns).as_deref(),
        Some("v1"),
        "not restored within 15 s"
    );
    println!(
        "e2e: deleted ConfigMap restored after {:?}",
        started.elapsed()
    );

    kubectl(&[
        "patch",
        "configmap",
        "healed",
        "-n",
        &ns,
        "--type=merge",
        "--field-manager=intruder",
        "-p",
        r#"{"data":{"k":"tampered"}}"#,
    ]);
    let started = std::time::Instant::now();
    while value(&ns).as_deref() != Some("v1")
        && started.elapsed() < std::time::Duration::from_secs(15)
    {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(
        value(&ns).as_deref(),
        Some("v1"),
        "edit not undone within 15 s"
    );
    println!(
        "e2e: edited ConfigMap restored after {:?}",
        started.elapsed()
    );
}
