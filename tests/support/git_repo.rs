//! A git repository in a temporary directory, reached through a `file://`
//! URL; commits go to branch `main`. Shared by `tests/` and `e2e/` (which
//! includes this file by path).

use std::path::Path;

pub struct GitRepo {
    dir: tempfile::TempDir,
    repo: git2::Repository,
}

impl Default for GitRepo {
    fn default() -> Self {
        Self::new()
    }
}

impl GitRepo {
    pub fn new() -> GitRepo {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = git2::RepositoryInitOptions::new();
        opts.initial_head("main");
        let repo = git2::Repository::init_opts(dir.path(), &opts).unwrap();
        GitRepo { dir, repo }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn url(&self) -> String {
        format!("file://{}", self.path().display())
    }

    /// Writes (creates or replaces) a file of the work tree.
    pub fn write(&self, rel: &str, content: &str) {
        let path = self.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
    }

    /// Removes a file of the work tree.
    pub fn remove(&self, rel: &str) {
        std::fs::remove_file(self.path().join(rel)).unwrap();
    }

    /// Commits the whole work tree (additions, changes and removals) to
    /// `main` and returns the full commit SHA.
    pub fn commit(&self, message: &str) -> String {
        let mut index = self.repo.index().unwrap();
        index
            .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
            .unwrap();
        index.update_all(["*"], None).unwrap();
        index.write().unwrap();
        let tree = self.repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = git2::Signature::now("krmsync tests", "tests@krmsync.dev").unwrap();
        let parent = self.repo.head().ok().map(|h| h.peel_to_commit().unwrap());
        let parents: Vec<&git2::Commit> = parent.iter().collect();
        self.repo
            .commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
            .unwrap()
            .to_string()
    }

    /// A lightweight tag `name` at `commit`.
    pub fn tag(&self, name: &str, commit: &str) {
        let obj = self
            .repo
            .find_object(git2::Oid::from_str(commit).unwrap(), None)
            .unwrap();
        self.repo.tag_lightweight(name, &obj, false).unwrap();
    }
}
