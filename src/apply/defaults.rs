//! Port protocols written out before a server-side apply.
//!
//! Server-side apply turns the applied configuration into a typed object
//! before it merges anything, and the ports of a Service (and of a
//! container) are lists keyed by port *and* protocol. API servers before
//! Kubernetes 1.21 know no default for a Service port's `protocol`, and
//! those before 1.20 none for a container port's: they refuse a port
//! without one ("associative list with keys has an element that omits key
//! field \"protocol\""), although the protocol is optional everywhere else
//! and defaults to `TCP`. Most manifests leave it out.
//!
//! So the applied configuration (never the rendered manifests, which stay
//! what `krmsync build` prints) gets `protocol: TCP` where a port has
//! none, as every API server fills it in anyway: the object stored is the
//! same, on every version.

use serde_json::Value;

use super::ObjectRef;

/// Where a kind keeps its pod spec (core and built-in workload kinds).
fn pod_spec_path(group: &str, kind: &str) -> Option<&'static [&'static str]> {
    match (group, kind) {
        ("", "Pod") => Some(&["spec"]),
        ("", "PodTemplate") => Some(&["template", "spec"]),
        ("", "ReplicationController")
        | ("apps", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet")
        | ("batch", "Job") => Some(&["spec", "template", "spec"]),
        ("batch", "CronJob") => Some(&["spec", "jobTemplate", "spec", "template", "spec"]),
        _ => None,
    }
}

/// Writes `protocol: TCP` into every port of a Service's `spec.ports` and
/// of a pod spec's containers and init containers that has no protocol (or
/// a null one). Anything not shaped as expected is left alone: the API
/// server's own validation reports it.
pub(super) fn fill_port_protocols(obj: &mut Value, oref: &ObjectRef) {
    if oref.group.is_empty() && oref.kind == "Service" {
        if let Some(ports) = obj.pointer_mut("/spec/ports") {
            default_protocols(ports);
        }
        return;
    }
    let Some(path) = pod_spec_path(&oref.group, &oref.kind) else {
        return;
    };
    let mut spec = obj;
    for step in path {
        match spec.get_mut(*step) {
            Some(next) => spec = next,
            None => return,
        }
    }
    for list in ["initContainers", "containers"] {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for c in containers {
            if let Some(ports) = c.get_mut("ports") {
                default_protocols(ports);
            }
        }
    }
}

fn default_protocols(ports: &mut Value) {
    let Some(ports) = ports.as_array_mut() else {
        return;
    };
    for port in ports {
        if let Some(port) = port.as_object_mut()
            && port.get("protocol").is_none_or(Value::is_null)
        {
            port.insert("protocol".into(), Value::String("TCP".into()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn oref(group: &str, kind: &str) -> ObjectRef {
        ObjectRef {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            namespace: Some("ns".into()),
            name: "x".into(),
        }
    }

    #[test]
    fn service_ports_without_a_protocol_get_tcp() {
        let mut svc = json!({"spec": {"ports": [
            {"port": 80, "targetPort": 8080},
            {"port": 53, "protocol": "UDP"},
            {"port": 443, "protocol": null},
        ]}});
        fill_port_protocols(&mut svc, &oref("", "Service"));
        assert_eq!(
            svc,
            json!({"spec": {"ports": [
                {"port": 80, "targetPort": 8080, "protocol": "TCP"},
                {"port": 53, "protocol": "UDP"},
                {"port": 443, "protocol": "TCP"},
            ]}})
        );
    }

    #[test]
    fn container_ports_of_every_workload_kind_get_tcp() {
        let pod_spec = || {
            json!({
                "initContainers": [{"name": "i", "ports": [{"containerPort": 9}]}],
                "containers": [
                    {"name": "a", "ports": [{"containerPort": 80}, {"containerPort": 53, "protocol": "SCTP"}]},
                    {"name": "b"},
                ],
            })
        };
        let want = json!({
            "initContainers": [{"name": "i", "ports": [{"containerPort": 9, "protocol": "TCP"}]}],
            "containers": [
                {"name": "a", "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 53, "protocol": "SCTP"}]},
                {"name": "b"},
            ],
        });
        let template = |spec: Value| json!({"template": {"spec": spec}});
        let mut cases = vec![
            ("", "Pod", json!({"spec": pod_spec()}), "/spec"),
            ("", "PodTemplate", template(pod_spec()), "/template/spec"),
            (
                "batch",
                "CronJob",
                json!({"spec": {"jobTemplate": {"spec": template(pod_spec())}}}),
                "/spec/jobTemplate/spec/template/spec",
            ),
        ];
        for (group, kind) in [
            ("", "ReplicationController"),
            ("apps", "Deployment"),
            ("apps", "ReplicaSet"),
            ("apps", "StatefulSet"),
            ("apps", "DaemonSet"),
            ("batch", "Job"),
        ] {
            cases.push((
                group,
                kind,
                json!({"spec": template(pod_spec())}),
                "/spec/template/spec",
            ));
        }
        for (group, kind, mut obj, at) in cases {
            fill_port_protocols(&mut obj, &oref(group, kind));
            assert_eq!(obj.pointer(at), Some(&want), "{group}/{kind}");
        }
    }

    #[test]
    fn other_kinds_and_odd_shapes_are_left_alone() {
        // a custom resource with the same shape is not touched: its schema
        // decides
        let mut cr = json!({"spec": {"ports": [{"port": 80}]}});
        let before = cr.clone();
        fill_port_protocols(&mut cr, &oref("example.com", "Service"));
        assert_eq!(cr, before);
        for mut odd in [
            json!({"spec": {"ports": "80"}}),
            json!({"spec": {"ports": [80, "x", null]}}),
            json!({"spec": null}),
            json!("not an object"),
        ] {
            let before = odd.clone();
            fill_port_protocols(&mut odd, &oref("", "Service"));
            assert_eq!(odd, before);
        }
        let mut deploy = json!({"spec": {"template": {"spec": {"containers": "c"}}}});
        let before = deploy.clone();
        fill_port_protocols(&mut deploy, &oref("apps", "Deployment"));
        assert_eq!(deploy, before);
    }
}
