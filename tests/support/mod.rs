//! Shared test support: `mod support;` in an integration test.
#![allow(dead_code, unused_imports)]

pub mod fake_api;
pub mod git_repo;
pub mod harness;

pub use fake_api::{FakeApi, Recorded};
pub use git_repo::GitRepo;
pub use harness::{Harness, condition, crash_point, insert_bundle, insert_bundle_dir};
