//! Remote references: which strings are URLs, how a remote root URL splits
//! into repository, path and ref, and where localize stores what it downloads.

use std::path::{Path, PathBuf};

/// A remote kustomization root (a directory in a git repository at a ref).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepoSpec {
    /// The URL as written in the kustomization (kept for messages).
    pub raw: String,
    /// The directory under `localized-files` naming the host (`gh` for
    /// `gh:` shorthands, `file-schemed` for `file://` repositories).
    pub host_dir: String,
    /// The repository path, dot-segments removed, without `.git`.
    pub repo_path: String,
    /// What git clones (before mirrors): scheme, host and the repository path
    /// as written.
    pub clone_url: String,
    /// Path of the root inside the repository (cleaned, may be empty).
    pub path_in_repo: String,
    /// The `ref` (or `version`) query parameter; empty when absent.
    pub git_ref: String,
    /// `timeout` query parameter in seconds, if given.
    pub timeout_secs: Option<u64>,
    /// `submodules` query parameter (default true).
    pub submodules: bool,
}

/// True for strings kustomize treats as a remote file (an HTTP(S) URL).
pub fn is_http_url(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    l.starts_with("https://") || l.starts_with("http://")
}

/// True for strings that may name a remote root.
pub fn looks_remote(s: &str) -> bool {
    let l = s.trim().to_ascii_lowercase();
    is_http_url(&l)
        || l.starts_with("git::")
        || l.starts_with("git@")
        || l.starts_with("ssh://")
        || l.starts_with("git://")
        || l.starts_with("file://")
        || l.starts_with("gh:")
        || l.starts_with("github.com/")
        || l.starts_with("gitlab.com/")
        || l.starts_with("bitbucket.org/")
}

/// Removes `.` and `..` segments and empty segments of a slash path
/// (`..` above the top is dropped, as for a URL path).
pub fn clean_url_path(p: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            s => out.push(s.to_string()),
        }
    }
    out
}

fn strip_userinfo_port(authority: &str) -> String {
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if let Some(rest) = host.strip_prefix('[') {
        // IPv6 literal
        return rest.split_once(']').map_or(rest, |(h, _)| h).to_string();
    }
    host.split_once(':').map_or(host, |(h, _)| h).to_string()
}

/// Parses a remote root URL in the forms kustomize accepts. `None` when the
/// string is not a remote root URL.
pub fn parse_repo_url(raw: &str) -> Option<RepoSpec> {
    let s = raw.trim();
    let s = s.strip_prefix("git::").unwrap_or(s);
    let (body, query) = match s.split_once('?') {
        Some((b, q)) => (b, q),
        None => (s, ""),
    };
    let mut git_ref = String::new();
    let mut timeout_secs = None;
    let mut submodules = true;
    for kv in query.split('&').filter(|kv| !kv.is_empty()) {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        match k {
            "ref" | "version" => git_ref = v.to_string(),
            "timeout" => {
                let v = v.trim_end_matches('s');
                timeout_secs = v.parse().ok();
            }
            "submodules" => submodules = !matches!(v, "0" | "false"),
            _ => {}
        }
    }
    // scheme://authority/path, git@host:path, gh:org/repo, host/path
    let (host_dir, prefix, path): (String, String, String);
    let lower = body.to_ascii_lowercase();
    if let Some(rest) = lower.strip_prefix("file://").map(|_| &body[7..]) {
        host_dir = "file-schemed".into();
        prefix = "file://".into();
        path = rest.to_string();
    } else if let Some(i) = body.find("://") {
        let scheme = &body[..i];
        let rest = &body[i + 3..];
        let (auth, p) = rest.split_once('/').unwrap_or((rest, ""));
        host_dir = strip_userinfo_port(auth);
        prefix = format!("{scheme}://{auth}/");
        path = p.to_string();
    } else if let Some(rest) = body.strip_prefix("gh:") {
        host_dir = "gh".into();
        prefix = "https://github.com/".into();
        path = rest.to_string();
    } else if let Some((user_host, p)) = body.split_once(':').filter(|(h, _)| h.contains('@')) {
        host_dir = strip_userinfo_port(user_host);
        prefix = format!("{user_host}:");
        path = p.to_string();
    } else if lower.starts_with("github.com/")
        || lower.starts_with("gitlab.com/")
        || lower.starts_with("bitbucket.org/")
    {
        let (h, p) = body.split_once('/')?;
        host_dir = h.to_string();
        prefix = format!("https://{h}/");
        path = p.to_string();
    } else {
        return None;
    };
    // split repository path and path in repo
    let (repo_raw, in_repo): (String, String) = if let Some((r, p)) = path.split_once("//") {
        (r.to_string(), p.to_string())
    } else if let Some(i) = path
        .find(".git/")
        .or_else(|| path.ends_with(".git").then(|| path.len() - 4))
    {
        let end = i + 4;
        (
            path[..end].to_string(),
            path.get(end..).unwrap_or("").to_string(),
        )
    } else if let Some(i) = path.find("_git/") {
        let after = &path[i + 5..];
        let (name, rest) = after.split_once('/').unwrap_or((after, ""));
        (format!("{}{}", &path[..i + 5], name), rest.to_string())
    } else if host_dir == "file-schemed" {
        (path.clone(), String::new())
    } else {
        let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let n = segs.len().min(2);
        (segs[..n].join("/"), segs[n..].join("/"))
    };
    let mut repo_segs = clean_url_path(&repo_raw);
    if let Some(last) = repo_segs.last_mut()
        && let Some(stripped) = last.strip_suffix(".git")
    {
        *last = stripped.to_string();
    }
    let repo_path = repo_segs.join("/");
    let repo_trimmed = repo_raw.trim_end_matches('/');
    let clone_url = if host_dir == "file-schemed" {
        format!("file://{repo_trimmed}")
    } else {
        format!("{prefix}{}", repo_trimmed.trim_start_matches('/'))
    };
    Some(RepoSpec {
        raw: raw.to_string(),
        host_dir,
        repo_path,
        clone_url,
        path_in_repo: clean_url_path(&in_repo).join("/"),
        git_ref,
        timeout_secs,
        submodules,
    })
}

/// Whether kustomize's repository URL parser accepts `raw` (it then calls
/// a file URL that answers with an error status "a git repository"): an
/// explicit marker (`//`, `.git`, `_git/`, `file://`) or, without one, at
/// least an `org/repo` path.
pub fn names_repository(raw: &str) -> bool {
    let Some(r) = parse_repo_url(raw) else {
        return false;
    };
    let body = raw.split('?').next().unwrap_or(raw);
    let after_scheme = body.split_once("://").map_or(body, |(_, rest)| rest);
    let explicit = after_scheme.contains("//")
        || after_scheme.contains(".git")
        || after_scheme.contains("_git/")
        || r.host_dir == "file-schemed";
    explicit || r.repo_path.split('/').filter(|s| !s.is_empty()).count() >= 2
}

impl RepoSpec {
    /// `localized-files/<host>/<repo>/<ref>` (the checkout's place); the
    /// root itself sits at this joined with its real path in the checkout.
    pub fn loc_repo_dir(&self) -> PathBuf {
        let mut p = PathBuf::from(super::LOCALIZED_DIR);
        p.push(&self.host_dir);
        for s in self.repo_path.split('/').filter(|s| !s.is_empty()) {
            p.push(s);
        }
        for s in self.git_ref.split('/').filter(|s| !s.is_empty()) {
            p.push(s);
        }
        p
    }

    /// The default destination for this remote target.
    pub fn default_new_dir(&self) -> String {
        let base = self
            .path_in_repo
            .rsplit('/')
            .find(|s| !s.is_empty())
            .or_else(|| self.repo_path.rsplit('/').find(|s| !s.is_empty()))
            .unwrap_or("repo");
        format!("localized-{base}-{}", self.git_ref.replace('/', "-"))
    }
}

/// Where a remote file URL is stored, relative to the kustomization root:
/// `localized-files/<host>/<escaped path, dot-segments removed>`.
pub fn loc_file_path(url: &str) -> PathBuf {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let rest = rest.split(['?', '#']).next().unwrap_or("");
    let (auth, path) = rest.split_once('/').unwrap_or((rest, ""));
    let mut p = PathBuf::from(super::LOCALIZED_DIR);
    p.push(strip_userinfo_port(auth));
    for s in clean_url_path(path) {
        p.push(s);
    }
    p
}

/// The last path segment of a URL (`TestUrlBase`).
pub fn url_base(url: &str) -> String {
    let rest = url.split('?').next().unwrap_or("");
    rest.split('/')
        .rfind(|s| !s.is_empty())
        .unwrap_or("")
        .to_string()
}

/// URL prefix rewrites (`--mirror FROM=TO`), applied like git's
/// `url.<TO>.insteadOf <FROM>`: the longest matching prefix wins.
#[derive(Clone, Debug, Default)]
pub struct Mirrors(pub Vec<(String, String)>);

impl Mirrors {
    /// Parses `FROM=TO` (split at the first `=`).
    pub fn parse_one(s: &str) -> Result<(String, String), String> {
        match s.split_once('=') {
            Some((f, t)) if !f.is_empty() && !t.is_empty() => Ok((f.to_string(), t.to_string())),
            _ => Err(format!("invalid mirror {s:?}: expected FROM=TO")),
        }
    }

    /// Mirrors from `--mirror` values and a comma-separated env value.
    pub fn from_args(args: &[String], env: Option<&str>) -> Result<Mirrors, String> {
        let mut v = Vec::new();
        for a in args {
            v.push(Self::parse_one(a)?);
        }
        if let Some(e) = env {
            for a in e.split(',').map(str::trim).filter(|a| !a.is_empty()) {
                v.push(Self::parse_one(a)?);
            }
        }
        Ok(Mirrors(v))
    }

    /// The URL to fetch for `url`.
    pub fn apply(&self, url: &str) -> String {
        self.0
            .iter()
            .filter(|(f, _)| url.starts_with(f.as_str()))
            .max_by_key(|(f, _)| f.len())
            .map_or_else(
                || url.to_string(),
                |(f, t)| format!("{t}{}", &url[f.len()..]),
            )
    }
}

/// Relative path from directory `base` to `target` (both absolute, clean).
pub fn relative(target: &Path, base: &Path) -> PathBuf {
    let t: Vec<_> = target.components().collect();
    let b: Vec<_> = base.components().collect();
    let common = t.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out = PathBuf::new();
    for _ in common..b.len() {
        out.push("..");
    }
    for c in &t[common..] {
        out.push(c.as_os_str());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root_path(url: &str) -> String {
        let r = parse_repo_url(url).unwrap();
        let mut p = r.loc_repo_dir();
        if !r.path_in_repo.is_empty() {
            p.push(&r.path_in_repo);
        }
        p.to_string_lossy().into_owned()
    }

    #[test]
    fn loc_root_paths() {
        for (u, want) in [
            (
                "https://github.com/org/repo?ref=value",
                "localized-files/github.com/org/repo/value",
            ),
            (
                "ssh://git@github.com/org/repo//path/to/root?ref=value",
                "localized-files/github.com/org/repo/value/path/to/root",
            ),
            (
                "git@github.com:org/repo//path/to/root?ref=value",
                "localized-files/github.com/org/repo/value/path/to/root",
            ),
            (
                "https://gitlab.com/org/repo//path/to/root?ref=value",
                "localized-files/gitlab.com/org/repo/value/path/to/root",
            ),
            (
                "file:///var/run/repo//path/to/root?ref=value",
                "localized-files/file-schemed/var/run/repo/value/path/to/root",
            ),
            (
                "https://[2001:4860:4860::8888]/org/repo//path/to/root?ref=value",
                "localized-files/2001:4860:4860::8888/org/repo/value/path/to/root",
            ),
            (
                "https://localhost.com:8080/org/repo//path/to/root?ref=value",
                "localized-files/localhost.com/org/repo/value/path/to/root",
            ),
            (
                "https://github.com/repo//path/to/root?ref=value",
                "localized-files/github.com/repo/value/path/to/root",
            ),
            (
                "https://github.com/org1/org2/repo.git//path/to/root?ref=value",
                "localized-files/github.com/org1/org2/repo/value/path/to/root",
            ),
            (
                "https://github.com/./../org/../org/repo.git//path/to/root?ref=value",
                "localized-files/github.com/org/repo/value/path/to/root",
            ),
            (
                "https://github.com/org/repo/path/to/root?ref=value",
                "localized-files/github.com/org/repo/value/path/to/root",
            ),
            (
                "https://gitlab.com/org./repo..git//path/to/root?ref=value",
                "localized-files/gitlab.com/org./repo./value/path/to/root",
            ),
            (
                "https://gitlab.com/org/repo//path/to/root?ref=group/version/kind",
                "localized-files/gitlab.com/org/repo/group/version/kind/path/to/root",
            ),
            ("gh:org/repo//p?ref=v1", "localized-files/gh/org/repo/v1/p"),
            (
                "https://dev.azure.com/org/project/_git/repo/path?version=v1",
                "localized-files/dev.azure.com/org/project/_git/repo/v1/path",
            ),
        ] {
            assert_eq!(root_path(u), want, "{u}");
        }
    }

    #[test]
    fn loc_file_paths() {
        for (u, want) in [
            (
                "https://raw.githubusercontent.com/org/repo/ref/path/to/file.yaml",
                "localized-files/raw.githubusercontent.com/org/repo/ref/path/to/file.yaml",
            ),
            ("http://host/path", "localized-files/host/path"),
            (
                "http://userinfo@host:1234/path/file?query",
                "localized-files/host/path/file",
            ),
            ("https://host", "localized-files/host"),
            ("https://host//", "localized-files/host"),
            (
                "https://host/file%2Eyaml",
                "localized-files/host/file%2Eyaml",
            ),
            (
                "https://host/path/blah/../to/foo/bar/../../file/./",
                "localized-files/host/path/to/file",
            ),
            (
                "https://host/foo/bar/baz/../../../../file",
                "localized-files/host/file",
            ),
            (
                "https://[2001:4860:4860::8888]/file.yaml",
                "localized-files/2001:4860:4860::8888/file.yaml",
            ),
            ("https://host/*", "localized-files/host/*"),
            ("https://host/aux/file", "localized-files/host/aux/file"),
            ("https://host/.../.file", "localized-files/host/.../.file"),
        ] {
            assert_eq!(loc_file_path(u).to_string_lossy(), want, "{u}");
        }
    }

    #[test]
    fn default_new_dirs_and_base() {
        let r = parse_repo_url("https://github.com/org/repo?ref=value").unwrap();
        assert_eq!(r.default_new_dir(), "localized-repo-value");
        let r = parse_repo_url("https://github.com/org/repo?ref=group/version").unwrap();
        assert_eq!(r.default_new_dir(), "localized-repo-group-version");
        assert_eq!(url_base("https://github.com/org/repo"), "repo");
        assert_eq!(url_base("github.com/org/repo//"), "repo");
        let r = parse_repo_url(
            "https://github.com/kubernetes-sigs/kustomize//api/x/simple?submodules=0&ref=kustomize/v4.5.7&timeout=300",
        )
        .unwrap();
        assert_eq!(r.clone_url, "https://github.com/kubernetes-sigs/kustomize");
        assert_eq!(r.default_new_dir(), "localized-simple-kustomize-v4.5.7");
        assert_eq!(r.timeout_secs, Some(300));
        assert!(!r.submodules);
    }

    #[test]
    fn mirrors_longest_prefix() {
        let m = Mirrors::from_args(
            &["https://github.com/=file:///a/".into()],
            Some("https://github.com/org/=file:///b/, x=y"),
        )
        .unwrap();
        assert_eq!(m.apply("https://github.com/org/r"), "file:///b/r");
        assert_eq!(m.apply("https://github.com/o/r"), "file:///a/o/r");
        assert_eq!(m.apply("https://gitlab.com/o/r"), "https://gitlab.com/o/r");
        assert!(Mirrors::parse_one("nope").is_err());
    }

    #[test]
    fn repository_urls_as_kustomize_tells_them() {
        for yes in [
            "https://github.com/org/repo//deploy?timeout=9",
            "https://files.example.com/org/repo/v1/cm.yaml",
            "https://dev.azure.com/org/project/_git/repo",
            "https://example.com/repo.git",
        ] {
            assert!(names_repository(yes), "{yes}");
        }
        for no in ["https://files.example.com/missing.yaml", "plain/path.yaml"] {
            assert!(!names_repository(no), "{no}");
        }
    }

    #[test]
    fn relative_paths() {
        assert_eq!(
            relative(Path::new("/a/b/c"), Path::new("/a")),
            PathBuf::from("b/c")
        );
        assert_eq!(
            relative(Path::new("/a/x"), Path::new("/a/b")),
            PathBuf::from("../x")
        );
    }
}
