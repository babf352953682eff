//! Leader election against the in-memory API server: expiry judged by
//! observed time (not by the wall clock of another replica), and a hung
//! renewal that ends leadership within the renew deadline.

mod support;

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use krmsync::controller::leader::{Attempt, LeaderElector, LeaseConfig};
use serde_json::json;
use support::FakeApi;

fn cfg(identity: &str) -> LeaseConfig {
    LeaseConfig {
        lease_duration: Duration::from_secs(2),
        renew_deadline: Duration::from_millis(1200),
        renew_every: Duration::from_millis(200),
        retry_every: Duration::from_millis(100),
        request_timeout: Duration::from_millis(400),
        ..LeaseConfig::new("krmsync-system", "krmsync-controller", identity)
    }
}

fn lease(holder: &str, renew_time: &str) -> serde_json::Value {
    json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "krmsync-controller", "namespace": "krmsync-system"},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 2,
                 "renewTime": renew_time, "acquireTime": renew_time}})
}

#[tokio::test]
async fn a_lease_with_an_old_renew_time_that_keeps_changing_is_not_taken() {
    let fake = FakeApi::start().await;
    let b = LeaderElector::new(fake.client(), cfg("b"));
    // the holder's clock is an hour behind ours, and it keeps renewing
    let started = Instant::now();
    let mut second = 0;
    let mut last_change = Instant::now();
    while started.elapsed() < Duration::from_secs(3) {
        second += 1;
        fake.insert(lease(
            "a",
            &format!("2000-01-01T00:00:{:02}.000000Z", second % 60),
        ));
        last_change = Instant::now();
        assert_eq!(
            b.try_acquire().await.unwrap(),
            Attempt::Follower { holder: "a".into() }
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    // it stops renewing: taken once unchanged for the lease duration, not before
    let stopped = last_change;
    loop {
        match b.try_acquire().await.unwrap() {
            Attempt::Leader => break,
            Attempt::Follower { .. } => tokio::time::sleep(Duration::from_millis(100)).await,
        }
        assert!(stopped.elapsed() < Duration::from_secs(5), "never taken");
    }
    assert!(
        stopped.elapsed() >= Duration::from_secs(2),
        "taken after {:?}",
        stopped.elapsed()
    );
    let api: kube::Api<Lease> = kube::Api::namespaced(fake.client(), "krmsync-system");
    let l = api.get("krmsync-controller").await.unwrap();
    assert_eq!(l.spec.unwrap().holder_identity.as_deref(), Some("b"));
}

#[tokio::test]
async fn a_renewal_that_hangs_ends_leadership_within_the_renew_deadline() {
    let fake = FakeApi::start().await;
    let a = LeaderElector::new(fake.client(), cfg("a"));
    a.acquire().await;
    fake.delay("*", "/leases/", Duration::from_secs(30));
    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(10), a.hold())
        .await
        .expect("hold() returned (leadership lost)");
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(2),
        "gave up after {took:?}, not within the renew deadline"
    );
}
