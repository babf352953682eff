//! Expected values were all checked against `kubectl kustomize`
//! (kustomize v5.5.0).

use super::*;

const HEAD: &str = "apiVersion: example.com/v1\nkind: Probe\nmetadata:\n  name: p\n";

fn strict(src: &str) -> Vec<Value> {
    match parse_documents_strict(src) {
        Ok(v) => v,
        Err(e) => panic!("unexpected error {e:?} for {src:?}"),
    }
}

fn strict_err(src: &str) -> ParseError {
    match parse_documents_strict(src) {
        Ok(v) => panic!("expected an error, got {v:?} for {src:?}"),
        Err(e) => e,
    }
}

fn lenient(src: &str) -> Vec<Value> {
    match parse_documents(src) {
        Ok(v) => v,
        Err(e) => panic!("unexpected error {e:?} for {src:?}"),
    }
}

fn lenient_err(src: &str) -> String {
    match parse_documents(src) {
        Ok(v) => panic!("expected an error, got {v:?} for {src:?}"),
        Err(e) => e.message,
    }
}

/// The `spec` of a probe resource whose spec body is `body`.
fn spec(body: &str) -> Value {
    let docs = strict(&format!("{HEAD}spec:\n{body}"));
    docs.first()
        .and_then(|d| d.get("spec"))
        .cloned()
        .unwrap_or(Value::Null)
}

/// The items of `spec.k: [ ... ]`.
fn items(flow_items: &str) -> Vec<Value> {
    match spec(&format!("  k: [{flow_items}]\n")).get("k") {
        Some(Value::Seq(v)) => v.clone(),
        other => panic!("not a list: {other:?}"),
    }
}

fn s(x: &str) -> Value {
    Value::String(x.to_owned())
}

#[test]
fn nulls_and_booleans_follow_go_yaml_v3() {
    use Value::{Bool, Null};
    assert_eq!(
        items("~, null, Null, NULL, nULL, true, True, TRUE, tRUE, false, False, FALSE"),
        vec![
            Null,
            Null,
            Null,
            Null,
            s("nULL"),
            Bool(true),
            Bool(true),
            Bool(true),
            s("tRUE"),
            Bool(false),
            Bool(false),
            Bool(false)
        ]
    );
    assert_eq!(
        items("yes, no, on, off, y, n, Y, N, Off"),
        ["yes", "no", "on", "off", "y", "n", "Y", "N", "Off"]
            .map(s)
            .to_vec()
    );
    assert_eq!(spec("  a:\n  b: ~\n").get("a"), Some(&Null));
}

#[test]
fn integers_accept_yaml_1_1_forms() {
    use Value::{Float, Int};
    assert_eq!(
        items(
            "0123, 0o17, 0O17, 0x1F, 0X1F, 0xff_ff, 1_000, 1000_, 01, +5, -5, -0b101, \
             0b101, 0B101, +0x10, -0x10, -0o17, -0123, 012_3, 1__0, 0b1_0, 0o1_7, 0_x1F, -0"
        ),
        vec![
            Int(83),
            Int(15),
            Int(15),
            Int(31),
            Int(31),
            Int(65535),
            Int(1000),
            Int(1000),
            Int(1),
            Int(5),
            Int(-5),
            Int(-5),
            Int(5),
            Int(5),
            Int(16),
            Int(-16),
            Int(-15),
            Int(-83),
            Int(83),
            Int(10),
            Int(2),
            Int(15),
            Int(31),
            Int(0)
        ]
    );
    // Not octal, so they fall through to the float rule.
    assert_eq!(
        items("08, 09, 0_8"),
        vec![Float(8.0), Float(9.0), Float(8.0)]
    );
    assert_eq!(
        items("_1000, 0b, 0o, 0x, 0b102, 0o8, 123abc, 1:20, 190:20:30"),
        [
            "_1000",
            "0b",
            "0o",
            "0x",
            "0b102",
            "0o8",
            "123abc",
            "1:20",
            "190:20:30"
        ]
        .map(s)
        .to_vec()
    );
}

#[test]
fn large_integers() {
    use Value::{Float, Int, UInt};
    assert_eq!(
        items(
            "9223372036854775807, 9223372036854775808, -9223372036854775808, \
             -9223372036854775809, 18446744073709551615, 18446744073709551616, \
             0x8000000000000000, -0x8000000000000000, 0xFFFFFFFFFFFFFFFF"
        ),
        vec![
            Int(i64::MAX),
            UInt(9_223_372_036_854_775_808),
            Int(i64::MIN),
            Float(-9.223_372_036_854_776e18),
            UInt(u64::MAX),
            Float(1.844_674_407_370_955_2e19),
            UInt(9_223_372_036_854_775_808),
            Int(i64::MIN),
            UInt(u64::MAX)
        ]
    );
    assert_eq!(
        items("-0x8000000000000001, 0x10000000000000000"),
        vec![s("-0x8000000000000001"), s("0x10000000000000000")]
    );
    assert_eq!(
        items("123456789012345678901234567890"),
        vec![Float(1.234_567_890_123_456_8e29)]
    );
}

#[test]
fn floats() {
    use Value::Float;
    assert_eq!(
        items(
            "3.0, 1e3, 1E3, 1.0e+10, .5, -.5, +.5, 0.1, 0., 1., 1.e5, 1.5e-3, 1_000.5, 1__0.5_, 12e03, .1_0, 1e1_0, 5., 1e-400"
        ),
        vec![
            Float(3.0),
            Float(1000.0),
            Float(1000.0),
            Float(1e10),
            Float(0.5),
            Float(-0.5),
            Float(0.5),
            Float(0.1),
            Float(0.0),
            Float(1.0),
            Float(1e5),
            Float(0.0015),
            Float(1000.5),
            Float(10.5),
            Float(12000.0),
            Float(0.1),
            Float(1e10),
            Float(5.0),
            Float(0.0)
        ]
    );
    assert_eq!(
        items(
            ".e5, 1e, 1e+, ., -., +., 0x1p-2, 1e400, .iNf, .5.5, ._1, Infinity, NaN, inf, nan, 0.1.2"
        ),
        [
            ".e5", "1e", "1e+", ".", "-.", "+.", "0x1p-2", "1e400", ".iNf", ".5.5", "._1",
            "Infinity", "NaN", "inf", "nan", "0.1.2"
        ]
        .map(s)
        .to_vec()
    );
    let special = items(".inf, .Inf, +.INF, -.inf, .nan, .NaN");
    let f: Vec<f64> = special
        .iter()
        .map(|v| match v {
            Value::Float(f) => *f,
            _ => 0.0,
        })
        .collect();
    assert_eq!(
        f.get(..4),
        Some(
            &[
                f64::INFINITY,
                f64::INFINITY,
                f64::INFINITY,
                f64::NEG_INFINITY
            ][..]
        )
    );
    assert!(f.get(4..).is_some_and(|r| r.iter().all(|x| x.is_nan())));
    match spec("  a: -0.0\n").get("a") {
        Some(Value::Float(f)) => assert!(*f == 0.0 && f.is_sign_negative()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn timestamps_become_rfc3339_strings() {
    let cases = [
        ("2001-01-01", "2001-01-01T00:00:00Z"),
        ("2001-1-1", "2001-01-01T00:00:00Z"),
        (
            "2001-12-14t21:59:43.10-05:00",
            "2001-12-14T21:59:43.1-05:00",
        ),
        ("2001-12-14 21:59:43.10", "2001-12-14T21:59:43.1Z"),
        ("2001-12-14  21:59:43.10", "2001-12-14T21:59:43.1Z"),
        ("2001-12-14T21:59:43+00:00", "2001-12-14T21:59:43Z"),
        ("2001-12-14T21:59:43-00:00", "2001-12-14T21:59:43Z"),
        ("2001-12-14T21:59:43.000000000Z", "2001-12-14T21:59:43Z"),
        (
            "2001-12-14T21:59:43.1234567891Z",
            "2001-12-14T21:59:43.123456789Z",
        ),
        ("2001-12-14T21:59:43,5Z", "2001-12-14T21:59:43.5Z"),
        ("2001-12-14T1:2:3Z", "2001-12-14T01:02:03Z"),
        ("2001-12-14T21:59:43+05:30", "2001-12-14T21:59:43+05:30"),
        ("0000-01-01", "0000-01-01T00:00:00Z"),
        ("9999-12-31T23:59:59-01:00", "9999-12-31T23:59:59-01:00"),
        ("2001-12-14 1:2:3.4", "2001-12-14T01:02:03.4Z"),
        (
            "2001-12-14T21:59:43.120-23:59",
            "2001-12-14T21:59:43.12-23:59",
        ),
        ("2000-02-29", "2000-02-29T00:00:00Z"),
    ];
    for (input, want) in cases {
        assert_eq!(
            spec(&format!("  t: {input}\n")).get("t"),
            Some(&s(want)),
            "{input}"
        );
    }
    // Not recognised: these stay as written.
    for input in [
        "2001-12-14 21:59:43.10 -5",
        "2001-12-14T21:59:43z",
        "2001-12-14T21:59:43",
        "2001-12-14T21:59Z",
        "2001-02-29",
        "2001-13-01",
        "2001-00-01",
        "2001-01-32",
        "2001-001-01",
        "12001-01-01",
        "2001-01-01T00:00:00+25:00",
        "2001-01-01T00:00:00+23:61",
        "2001-12-14T24:00:00Z",
        "2001-12-14T23:60:00Z",
        "2001-12-14T23:59:60Z",
        "2001-12-14T21:59:43.10 -05:00",
        "2001-12-14t21:59:43.10-05:00:00",
    ] {
        assert_eq!(
            spec(&format!("  t: {input}\n")).get("t"),
            Some(&s(input)),
            "{input}"
        );
    }
    // Quoted: a string.
    assert_eq!(
        spec("  t: \"2001-01-01\"\n").get("t"),
        Some(&s("2001-01-01"))
    );
}

#[test]
fn timestamp_with_offset_of_24_hours_fails_like_json_encoding() {
    let e = strict_err(&format!("{HEAD}spec:\n  k: 2001-01-01T00:00:00+24:00\n"));
    assert_eq!(
        e.message,
        "map[string]interface {}{\"apiVersion\":\"example.com/v1\", \"kind\":\"Probe\", \
         \"metadata\":map[string]interface {}{\"name\":\"p\"}, \"spec\":map[string]interface \
         {}{\"k\":time.Date(2001, time.January, 1, 0, 0, 0, 0, time.Location(\"\"))}}: json: \
         error calling MarshalJSON for type time.Time: Time.MarshalJSON: timezone hour outside \
         of range [0,23]"
    );
}

#[test]
fn re_encoding_quotes_some_scalars_in_flow_collections() {
    let v = spec(
        "  a: [2001-12-14T21:59:43Z, 2001-01-01]\n  b: {t: 2001-12-14 21:59:43}\n  \
         c: 2001-12-14 21:59:43\n  d: {a: , b, c: ~}\n  e: [!!null , ~]\n",
    );
    assert_eq!(
        v.get("a"),
        Some(&Value::Seq(vec![
            s("2001-12-14T21:59:43Z"),
            s("2001-01-01T00:00:00Z")
        ]))
    );
    assert_eq!(v.get_path(&["b", "t"]), Some(&s("2001-12-14 21:59:43")));
    assert_eq!(v.get("c"), Some(&s("2001-12-14T21:59:43Z")));
    assert_eq!(v.get_path(&["d", "a"]), Some(&s("")));
    assert_eq!(v.get_path(&["d", "b"]), Some(&s("")));
    assert_eq!(v.get_path(&["d", "c"]), Some(&Value::Null));
    assert_eq!(
        v.get("e"),
        Some(&Value::Seq(vec![Value::Null, Value::Null]))
    );
    // a single-pair mapping in a flow sequence is a flow mapping too
    let v = spec("  f: [x: , y: ~]\n");
    let pair = |k: &str, v: Value| Value::Map(Mapping::from_iter([(k.to_string(), v)]));
    assert_eq!(
        v.get("f"),
        Some(&Value::Seq(vec![pair("x", s("")), pair("y", Value::Null)]))
    );
    // An alias re-decides where it is used.
    let v = spec("  x: &e\n  y: [*e]\n  z: *e\n");
    assert_eq!(v.get("y"), Some(&Value::Seq(vec![s("")])));
    assert_eq!(v.get("z"), Some(&Value::Null));
    // a block collection with an anchor or a tag is still a block one
    let v = spec(
        "  g: &q
    k: 
    t: 2001-12-14 21:59:43
  h: !!seq
  - 
  i: &r [2001-12-14 21:59:43, {k: }]
",
    );
    assert_eq!(v.get_path(&["g", "k"]), Some(&Value::Null));
    assert_eq!(v.get_path(&["g", "t"]), Some(&s("2001-12-14T21:59:43Z")));
    assert_eq!(v.get("h"), Some(&Value::Seq(vec![Value::Null])));
    assert_eq!(
        v.get("i"),
        Some(&Value::Seq(vec![
            s("2001-12-14 21:59:43"),
            pair("k", s(""))
        ]))
    );
}

#[test]
fn explicit_tags() {
    let v = spec(
        "  a: !!int \"5\"\n  b: !!float \"1\"\n  c: !!bool \"true\"\n  d: !!null \"\"\n  \
         e: !!str 123\n  f: !!binary aGVsbG8=\n  g: !foo bar\n  h: !foo 123\n  i: ! 123\n  \
         j: !!timestamp \"2001-01-01\"\n  k: !!str 2001-01-01\n  l: !foo {a: 1}\n  \
         m: !!float 1e3\n  n: !!int 0x10\n  o: !!null\n  p: !!str\n  \
         s: !<tag:yaml.org,2002:int> \"7\"\n  t: !!binary |\n    aGVs\n    bG8=\n  \
         u: !!binary /w==\n  w: !!int \"-0b11\"\n  y: !!int 12345678901234567890\n  \
         z: !!float 0x10\n  aa: !foo\n  ac: !!str ~\n  ad: !!float \"-1\"\n  ag: <<\n  \
         ah: !!seq foo\n  aj: !!str [a]\n",
    );
    let want = [
        ("a", Value::Int(5)),
        ("b", Value::Float(1.0)),
        ("c", Value::Bool(true)),
        ("d", Value::Null),
        ("e", s("123")),
        ("f", s("hello")),
        ("g", s("bar")),
        ("h", s("123")),
        ("i", Value::Int(123)),
        ("j", s("2001-01-01T00:00:00Z")),
        ("k", s("2001-01-01")),
        ("m", Value::Float(1000.0)),
        ("n", Value::Int(16)),
        ("o", Value::Null),
        ("p", s("")),
        ("s", Value::Int(7)),
        ("t", s("hello")),
        ("u", s("\u{fffd}")),
        ("w", Value::Int(-3)),
        ("y", Value::UInt(12_345_678_901_234_567_890)),
        ("z", Value::Float(16.0)),
        ("aa", s("")),
        ("ac", s("~")),
        ("ad", Value::Float(-1.0)),
        ("ag", s("<<")),
        ("ah", s("foo")),
        ("aj", Value::Seq(vec![s("a")])),
    ];
    for (k, want) in want {
        assert_eq!(v.get(k), Some(&want), "{k}");
    }
    assert_eq!(v.get_path(&["l", "a"]), Some(&Value::Int(1)));
}

#[test]
fn undecodable_tagged_scalars() {
    let cases = [
        ("!!int \"abc\"", "cannot decode !!str `abc` as a !!int"),
        ("!!int 1.5", "cannot decode !!float `1.5` as a !!int"),
        ("!!bool yes", "cannot decode !!str `yes` as a !!bool"),
        ("!!float abc", "cannot decode !!str `abc` as a !!float"),
        ("!!null foo", "cannot decode !!str `foo` as a !!null"),
        (
            "!!timestamp \"2001-12-14 21:59:43.10 -5\"",
            "cannot decode !!str `2001-12-14 21:59:43.10 -5` as a !!timestamp",
        ),
        (
            "!!binary \"@@@\"",
            "!!binary value contains invalid base64 data",
        ),
        (
            "!!float 12345678901234567890",
            "cannot decode !!int `12345678901234567890` as a !!float",
        ),
    ];
    for (input, msg) in cases {
        let e = strict_err(&format!("{HEAD}spec:\n  k: {input}\n"));
        assert_eq!(
            e.message,
            format!("map[string]interface {{}}(nil): yaml: {msg}")
        );
    }
    let e = strict_err(&format!("{HEAD}spec:\n  ? [a]\n  : x\n"));
    assert_eq!(
        e.message,
        "map[string]interface {}(nil): yaml: invalid map key: []interface {}{\"a\"}"
    );
    let e = strict_err(&format!("{HEAD}spec:\n  ? {{a: 1}}\n  : x\n"));
    assert_eq!(
        e.message,
        "map[string]interface {}(nil): yaml: invalid map key: map[string]interface {}{\"a\":1}"
    );
}

#[test]
fn anchors_and_merge_keys() {
    let v = strict(&format!(
        "{HEAD}x: &a {{k: 1, j: 1}}\ny: &b {{k: 2, m: 2}}\nspec:\n  <<: [*a, *b]\n  j: 0\n"
    ));
    let top = v
        .first()
        .and_then(|d| d.get("spec"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(top.get("j"), Some(&Value::Int(0)));
    assert_eq!(top.get("k"), Some(&Value::Int(1)));
    assert_eq!(top.get("m"), Some(&Value::Int(2)));
    assert!(top.get("<<").is_none());

    let v = spec_of(
        "  s: &s [1, 2]\n  m: &m {q: [1, {r: 2}]}\n  a: *s\n  b: *m\n  c:\n    <<: *m\n    \
         q: 3\n  d: &n\n    <<: *m\n    e: 1\n  f:\n    <<: *n\n  g: &x 1\n  h: &x 2\n  i: *x\n",
    );
    assert_eq!(v.get("a"), v.get("s"));
    assert_eq!(v.get("b"), v.get("m"));
    assert_eq!(v.get_path(&["c", "q"]), Some(&Value::Int(3)));
    assert_eq!(v.get_path(&["f", "e"]), Some(&Value::Int(1)));
    assert_eq!(v.get_path(&["f", "q"]), v.get_path(&["m", "q"]));
    assert_eq!(v.get("i"), Some(&Value::Int(2)));

    let v = spec("  <<: {a: 1, b: {c: 1}}\n  b: 2\n");
    assert_eq!(v.get("a"), Some(&Value::Int(1)));
    assert_eq!(v.get("b"), Some(&Value::Int(2)));
    // Only a plain `<<` merges; the first `<<` entry is the one removed.
    let v = spec("  <<: {a: 1}\n  \"<<\": 2\n");
    assert_eq!(v.get("<<"), Some(&Value::Int(2)));
    assert_eq!(v.get("a"), Some(&Value::Int(1)));
    assert_eq!(
        spec("  <<: []\n  a: 1\n").as_map().map(Mapping::len),
        Some(1)
    );
}

fn spec_of(body: &str) -> Value {
    spec(body)
}

#[test]
fn merge_key_errors() {
    let cases = [
        (
            "x: &a 1\nspec:\n  <<: *a\n",
            "invalid map merge: received alias for a non-map value",
        ),
        (
            "spec:\n  <<: 1\n",
            "map merge requires map or sequence of maps as the value",
        ),
        (
            "spec:\n  <<: ~\n",
            "map merge requires map or sequence of maps as the value",
        ),
        (
            "x: &a {k: 1}\nspec:\n  <<: [*a, [1]]\n",
            "invalid map merge: received a nested sequence",
        ),
        (
            "x: &a {k: 1}\nspec:\n  <<: [*a, 1]\n",
            "map merge requires map or sequence of maps as the value",
        ),
        (
            "x: &a {k: 1}\nspec:\n  <<: *a\n  <<: *a\n",
            "duplicate merge key",
        ),
    ];
    for (body, msg) in cases {
        assert_eq!(strict_err(&format!("{HEAD}{body}")).message, msg, "{body}");
    }
}

#[test]
fn documents_are_split_like_kyaml() {
    let docs = strict("a: 1\n---\n# only a comment\n---\n\n---\nb: 2\n...\nc: 3\n");
    assert_eq!(docs.len(), 4);
    assert_eq!(docs.get(1), Some(&Value::Null));
    assert_eq!(docs.get(2), Some(&Value::Null));
    // Everything after the first document of a piece is ignored.
    assert_eq!(docs.get(3).and_then(|d| d.get("c")), None);
    assert_eq!(docs.get(3).and_then(|d| d.get("b")), Some(&Value::Int(2)));
    // A leading `---` and a trailing one without newline.
    assert_eq!(strict("---\na: 1\n---").len(), 1);
    assert_eq!(strict("").len(), 0);
    assert_eq!(strict("# nothing\n"), vec![Value::Null]);
    assert_eq!(strict("--- # c\na: 1\n--- # c\nb: 1\n").len(), 2);
    let e = strict_err("a: 1\n--- {a: 1}\n");
    assert_eq!(e.message, "invalid document separator: --- {a: 1}");
    assert_eq!(e.line, 2);
    assert_eq!(
        strict_err("a: 1\n---foo\nb: 2\n").message,
        "invalid document separator: ---foo"
    );
}

#[test]
fn syntax_error_lines_count_from_the_piece() {
    let e = strict_err(&format!("{HEAD}x: 1\n---\n{HEAD}y: 2\nz: [\n"));
    assert_eq!(
        e.message,
        "yaml: line 6: did not find expected node content"
    );
}

#[test]
fn syntax_errors() {
    let cases = [
        (
            "a: 1\nb: 2\nc:\n  d: x\n  e: y\n f: z\n",
            "yaml: line 5: did not find expected key",
        ),
        (
            "a: 1\nb: 2\nc:\n  d: x\n  e: y: z\n",
            "yaml: line 5: mapping values are not allowed in this context",
        ),
        (
            "k: -\n",
            "yaml: block sequence entries are not allowed in this context",
        ),
        (
            "a1: 1\nk: -\n",
            "yaml: line 2: block sequence entries are not allowed in this context",
        ),
        (
            "apiVersion: v1\nkind: Probe\nmetadata:\n  name: p\nspec:\n  selector:\n    app: x\n    - name: http\n",
            "yaml: line 6: did not find expected key",
        ),
        ("a:\n- x\nb\n", "yaml: line 3: could not find expected ':'"),
        (
            "spec:\n  a: [x, y]]\n",
            "yaml: line 1: did not find expected key",
        ),
        (
            "spec:\n  a: *nope\n",
            "yaml: unknown anchor 'nope' referenced",
        ),
        (
            "a: 1\nspec:\n  a: \"x\\/y\"\n",
            "yaml: line 3: found unknown escape character",
        ),
        (
            "%YAML 1.2\n---\na: 1\n",
            "yaml: found incompatible YAML document",
        ),
        (
            "%YAML 1.1\n---\na: 1\n",
            "yaml: line 1: did not find expected <document start>",
        ),
        (
            "%YAML 1.1\na: 1\n",
            "yaml: line 2: mapping values are not allowed in this context",
        ),
        (
            "a: 1\n\tb: 2\n",
            "yaml: found a tab character that violates indentation",
        ),
        (
            "x: 1\nspec:\n\ta: 1\n",
            "yaml: line 3: found character that cannot start any token",
        ),
    ];
    for (src, msg) in cases {
        assert_eq!(strict_err(src).message, msg, "{src:?}");
    }
    // Positions of the problem in the whole input.
    let e = strict_err("a: 1\n---\nb: [\n");
    assert_eq!(e.line, 4);
}

#[test]
fn duplicate_keys_fail_in_resources() {
    let e = strict_err(&format!(
        "---\n{HEAD}spec:\n  a: |\n    x\n\n    y\n  b: 1\n  a: 2\n  c:\n    d: 1\n    d: 2\n  \
         c: 3\n  e: {{f: 1, f: 2}}\n"
    ));
    assert_eq!(
        e.message,
        "map[string]interface {}(nil): yaml: unmarshal errors:\n  line 11: mapping key \"a\" \
         already defined at line 6\n  line 15: mapping key \"c\" already defined at line 12"
    );
    let e = strict_err(&format!(
        "# top comment\n\n{HEAD}\n# comment about spec\nspec:\n  a: 1   # trailing\n\n  \
         # head comment\n  b: [1,\n    2]\n  c: \"x\n    y\"\n  d:\n    e\n  a: 2\n"
    ));
    assert_eq!(
        e.message,
        "map[string]interface {}(nil): yaml: unmarshal errors:\n  line 14: mapping key \"a\" \
         already defined at line 9"
    );
    // A quoted and a plain key with the same text collide too.
    let e = strict_err(&format!("{HEAD}spec:\n  list:\n  - a: 1\n    \"a\": 2\n"));
    assert!(
        e.message
            .contains("mapping key \"a\" already defined at line 7")
    );
}

#[test]
fn null_keys_become_duplicates_and_empty_keys_strings() {
    let e = strict_err(&format!("{HEAD}spec:\n  ~: x\n  a: 1\n"));
    assert_eq!(
        e.message,
        "map[string]interface {}(nil): yaml: unmarshal errors:\n  line 8: mapping key \"~\" \
         already defined at line 6"
    );
    let e = strict_err(&format!(
        "{HEAD}spec:\n  base: &b {{x: 1, y: 2}}\n  o:\n    <<: *b\n    y: 3\n    ~: z\n"
    ));
    assert_eq!(
        e.message,
        "map[string]interface {}(nil): yaml: unmarshal errors:\n  line 11: mapping key \"~\" \
         already defined at line 9"
    );
    let v = spec("  ? \n  : x\n  d: 2\n");
    assert_eq!(v.get(""), Some(&s("x")));
}

#[test]
fn duplicate_keys_last_wins_in_kustomizations() {
    let docs = lenient("namePrefix: a\nnamePrefix: b\nlabels: {a: \"1\", \"a\": x}\n");
    let doc = docs.first().cloned().unwrap_or_default();
    assert_eq!(doc.get("namePrefix"), Some(&s("b")));
    assert_eq!(doc.get_path(&["labels", "a"]), Some(&s("x")));
}

#[test]
fn non_string_keys_fail_in_resources() {
    let e = strict_err(&format!("{HEAD}spec:\n  1: x\n  a: 1\n"));
    assert_eq!(
        e.message,
        "map[string]interface {}{\"apiVersion\":\"example.com/v1\", \"kind\":\"Probe\", \
         \"metadata\":map[string]interface {}{\"name\":\"p\"}, \"spec\":map[interface \
         {}]interface {}{\"a\":1, 1:\"x\"}}: json: unsupported type: map[interface {}]interface {}"
    );
    let e = strict_err(&format!(
        "{HEAD}spec:\n  !!binary aGk=: x\n  z: [1, \"s\", null, 1.5, true, {{a: 1}}, \
         9223372036854775808, -0.0, 1e300, 1e21, 123456789.0, 0.000001, 0.0000001, \
         \"q\\\"uote\\u00e9\\x01\\t\", 2001-01-01]\n"
    ));
    assert_eq!(
        e.message,
        "map[string]interface {}{\"apiVersion\":\"example.com/v1\", \"kind\":\"Probe\", \
         \"metadata\":map[string]interface {}{\"name\":\"p\"}, \"spec\":map[interface \
         {}]interface {}{\"hi\":\"x\", \"z\":[]interface {}{1, \"s\", interface {}(nil), 1.5, \
         true, map[string]interface {}{\"a\":1}, 0x8000000000000000, -0, 1e+300, 1e+21, \
         1.23456789e+08, 1e-06, 1e-07, \"q\\\"uoteé\\x01\\t\", time.Date(2001, time.January, 1, \
         0, 0, 0, 0, time.UTC)}}}: json: unsupported type: map[interface {}]interface {}"
    );
    // Quoted keys are strings...
    let v = spec("  \"1\": x\n  \"true\": y\n");
    assert_eq!(v.get("1"), Some(&s("x")));
    assert_eq!(v.get("true"), Some(&s("y")));
    // ... except in annotations, which kustomize writes back unquoted.
    let e = strict_err(
        "apiVersion: v1\nkind: Probe\nmetadata:\n  name: p\n  annotations:\n    \"1\": x\n    a: b\n",
    );
    assert_eq!(
        e.message,
        "map[string]interface {}{\"apiVersion\":\"v1\", \"kind\":\"Probe\", \
         \"metadata\":map[string]interface {}{\"annotations\":map[interface {}]interface \
         {}{\"a\":\"b\", 1:\"x\"}, \"name\":\"p\"}}: json: unsupported type: map[interface \
         {}]interface {}"
    );
}

#[test]
fn go_key_order_in_error_messages() {
    let e = strict_err(
        "apiVersion: example.com/v1\nkind: Probe\nmetadata:\n  name: p\n  annotations:\n    \
         \"1\": x\n    \"true\": y\n    \"1.5\": z\n    \"2001-01-01\": w\n    \
         \"9223372036854775808\": u\n    \"a\": b\n    \"~\": n\n    \"-1\": m\n    \
         \"false\": f\n    \"2.5\": g\n    \"2001-12-14t21:59:43.10-05:00\": tz\n    \
         \"2001-12-14t21:59:43.10+00:00\": tz0\n    \"2001-12-14t21:59:43.123456789Z\": tzz\n",
    );
    assert_eq!(
        e.message,
        "map[string]interface {}{\"apiVersion\":\"example.com/v1\", \"kind\":\"Probe\", \
         \"metadata\":map[string]interface {}{\"annotations\":map[interface {}]interface \
         {}{interface {}(nil):\"n\", \"a\":\"b\", 0x8000000000000000:\"u\", -1:\"m\", 1:\"x\", \
         1.5:\"z\", 2.5:\"g\", false:\"f\", true:\"y\", time.Date(2001, time.January, 1, 0, 0, \
         0, 0, time.UTC):\"w\", time.Date(2001, time.December, 14, 21, 59, 43, 100000000, \
         time.Local):\"tz0\", time.Date(2001, time.December, 14, 21, 59, 43, 100000000, \
         time.Location(\"\")):\"tz\", time.Date(2001, time.December, 14, 21, 59, 43, \
         123456789, time.UTC):\"tzz\"}, \"name\":\"p\"}}: json: unsupported type: \
         map[interface {}]interface {}"
    );
}

#[test]
fn annotations_keep_their_source_text() {
    let docs = strict(
        "apiVersion: v1\nkind: Probe\nmetadata:\n  name: p\n  annotations:\n    a: 1\n    \
         b: True\n    c: 2001-01-01\n    d: 0x10\n    e: ~\n    f: 1.50\n    \
         g: !!binary aGVsbG8=\n    h: [1]\n    i: {j: k}\n    l: |\n      x\n      y\n    \
         m:\n    n: &an 0x20\n    o: *an\n    a: 7\n    p: null\n    q: \"yes\"\n",
    );
    let ann = docs
        .first()
        .and_then(|d| d.get_path(&["metadata", "annotations"]))
        .cloned()
        .unwrap_or_default();
    let want = [
        ("a", "7"),
        ("b", "True"),
        ("c", "2001-01-01"),
        ("d", "0x10"),
        ("e", "~"),
        ("f", "1.50"),
        ("g", "aGVsbG8="),
        ("h", ""),
        ("i", ""),
        ("l", "x\ny\n"),
        ("m", ""),
        ("n", "0x20"),
        ("o", "0x20"),
        ("p", "null"),
        ("q", "yes"),
    ];
    for (k, v) in want {
        assert_eq!(ann.get(k), Some(&s(v)), "{k}");
    }
    // Labels are not rewritten.
    let v = strict("apiVersion: v1\nkind: Probe\nmetadata:\n  name: p\n  labels:\n    d: 0x10\n");
    assert_eq!(
        v.first()
            .and_then(|d| d.get_path(&["metadata", "labels", "d"])),
        Some(&Value::Int(16))
    );
    // Merges into annotations use the merged text too.
    let v = strict(
        "apiVersion: v1\nkind: Probe\nmetadata:\n  name: p\n  annotations:\n    a: 1\n    \
         <<: {b: 2, c: [1]}\n",
    );
    let ann = v
        .first()
        .and_then(|d| d.get_path(&["metadata", "annotations"]));
    assert_eq!(ann.and_then(|a| a.get("b")), Some(&s("2")));
    assert_eq!(ann.and_then(|a| a.get("c")), Some(&s("")));
}

#[test]
fn block_and_quoted_scalars() {
    let v = spec(
        "  lit: |\n    line1\n      indented\n    line3\n\n  keep: |+\n    a\n\n  strip: |-\n    \
         a\n    b\n  fold: >\n    a\n    b\n\n    c\n     d\n    e\n  fold2: >-\n    x\n  \
         indent: |2\n      two\n  plain: a\n    b\n\n    c\n  dq: \"a\n    b\\\n    c\n\n    \
         d\"\n  sq: 'it''s\n    x'\n  empty_lit: |\n  last: x\n",
    );
    let want = [
        ("lit", "line1\n  indented\nline3\n"),
        ("keep", "a\n\n"),
        ("strip", "a\nb"),
        // kyaml's printer adds a line break before the more-indented line
        ("fold", "a b\nc\n\n d\ne\n"),
        ("fold2", "x"),
        ("indent", "  two\n"),
        ("plain", "a b\nc"),
        ("dq", "a bc\nd"),
        ("sq", "it's x"),
        ("empty_lit", ""),
    ];
    for (k, want) in want {
        assert_eq!(v.get(k), Some(&s(want)), "{k}");
    }
}

#[test]
fn escapes_and_comments() {
    let v = spec(
        "  esc: \"\\x41\\u00e9\\U0001F600\\t\\\"\\\\\\0\\a\\b\\e\\f\\n\\r\\v\\L\\P\\N\\_\\ \"\n  \
         a: x # comment\n  b: \"y\" #c\n  c: z#notcomment\n  d: [1, 2] # c\n  e: \"#\"\n",
    );
    assert_eq!(
        v.get("esc"),
        Some(&s(
            "Aé😀\t\"\\\0\u{7}\u{8}\u{1b}\u{c}\n\r\u{b}\u{2028}\u{2029}\u{85}\u{a0} "
        ))
    );
    assert_eq!(v.get("a"), Some(&s("x")));
    assert_eq!(v.get("b"), Some(&s("y")));
    assert_eq!(v.get("c"), Some(&s("z#notcomment")));
    assert_eq!(v.get("e"), Some(&s("#")));
}

#[test]
fn crlf_bom_tabs_and_json() {
    let docs = strict(
        "\u{feff}apiVersion: v1\r\nkind: Probe\r\nmetadata:\r\n  name: p\r\nspec:\r\n  \
         a: \"x\r\n    y\"\r\n  b: |\r\n    l1\r\n    l2\r\n---\r\nkind: Q\r\n",
    );
    assert_eq!(docs.len(), 2);
    let sp = docs
        .first()
        .and_then(|d| d.get("spec"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(sp.get("a"), Some(&s("x y")));
    assert_eq!(sp.get("b"), Some(&s("l1\nl2\n")));
    assert_eq!(
        docs.first().and_then(|d| d.get("apiVersion")),
        Some(&s("v1"))
    );
    // A tab after `:` separates like a space.
    let v = spec_of("  a:\tx\n  b: \"x\ty\"\n");
    assert_eq!(v.get("a"), Some(&s("x")));
    assert_eq!(v.get("b"), Some(&s("x\ty")));
    let docs = strict(
        "{\"apiVersion\": \"v1\", \"kind\": \"Probe\", \"spec\": {\"a\": 1.0, \"b\": 1e2, \
         \"c\": null, \"d\": [true], \"e\": \"2001-01-01\", \"f\": 12345678901234567890, \
         \"g\": \"\\u00e9\"}}",
    );
    let sp = docs
        .first()
        .and_then(|d| d.get("spec"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(sp.get("a"), Some(&Value::Float(1.0)));
    assert_eq!(sp.get("b"), Some(&Value::Float(100.0)));
    assert_eq!(sp.get("c"), Some(&Value::Null));
    assert_eq!(sp.get("e"), Some(&s("2001-01-01")));
    assert_eq!(sp.get("f"), Some(&Value::UInt(12_345_678_901_234_567_890)));
    assert_eq!(sp.get("g"), Some(&s("é")));
    // go-yaml has no surrogate pairs in `\u` escapes (JSON's way to
    // write characters beyond U+FFFF).
    assert_eq!(
        strict_err("{\"a\": \"\\ud83d\\ude00\"}").message,
        "yaml: found invalid Unicode character escape code"
    );
}

#[test]
fn kustomization_scalars_follow_go_yaml_v2() {
    let docs = lenient(
        "a: [yes, no, on, Off, y, N, true, ~, 0x10, 0123, 2001-01-01, \
         2001-12-14t21:59:43.10-05:00, 1.5, !!binary aGk=, !!int \"5\", ! 123, !foo bar]\n",
    );
    let want = vec![
        Value::Bool(true),
        Value::Bool(false),
        Value::Bool(true),
        Value::Bool(false),
        Value::Bool(true),
        Value::Bool(false),
        Value::Bool(true),
        Value::Null,
        Value::Int(16),
        Value::Int(83),
        s("2001-01-01"),
        s("2001-12-14t21:59:43.10-05:00"),
        Value::Float(1.5),
        s("hi"),
        Value::Int(5),
        s("123"),
        s("bar"),
    ];
    assert_eq!(
        docs.first().and_then(|d| d.get("a")),
        Some(&Value::Seq(want))
    );
    // Keys are stringified like sigs.k8s.io/yaml does.
    let docs = lenient(
        "m: {1: a, 1.5: b, yes: c, 2001-01-01: d, 123456789012345678901234567890: e, x: f}\n",
    );
    let m = docs
        .first()
        .and_then(|d| d.get("m"))
        .cloned()
        .unwrap_or_default();
    for (k, v) in [
        ("1", "a"),
        ("1.5", "b"),
        ("true", "c"),
        ("2001-01-01", "d"),
        ("1.2345679e+29", "e"),
        ("x", "f"),
    ] {
        assert_eq!(m.get(k), Some(&s(v)), "{k}");
    }
    // A merge overrides what was written before it.
    let docs = lenient("l:\n  a: b\n  <<: {a: c}\n");
    assert_eq!(
        docs.first().and_then(|d| d.get_path(&["l", "a"])),
        Some(&s("c"))
    );
}

#[test]
fn kustomization_errors() {
    assert_eq!(
        lenient_err("m: {18446744073709551615: a}\n"),
        "unsupported map key of type: uint64, key: 0xffffffffffffffff, value: \"a\""
    );
    assert_eq!(
        lenient_err("m: {~: a}\n"),
        "unsupported map key of type: %!s(<nil>), key: <nil>, value: \"a\""
    );
    assert_eq!(
        lenient_err("a: !!int abc\n"),
        "yaml: cannot decode !!str `abc` as a !!int"
    );
    assert_eq!(
        lenient_err("a: [\n"),
        "yaml: line 1: did not find expected node content"
    );
    assert_eq!(
        lenient_err("m: {[a]: b}\n"),
        "yaml: invalid map key: []interface {}{\"a\"}"
    );
    assert_eq!(
        lenient_err("m: {a: .inf}\n"),
        "json: unsupported value: +Inf"
    );
    assert_eq!(
        lenient_err("m: {a: .nan}\n"),
        "json: unsupported value: NaN"
    );
    // Only the first document matters to kustomize.
    let docs = lenient("a: 1\n---\nb: [\n");
    assert_eq!(docs.len(), 1);
    assert_eq!(lenient("a: 1\n---\nb: 2\n").len(), 2);
    assert_eq!(lenient("---\n# c\n"), vec![Value::Null]);
}

#[test]
fn nesting_and_alias_limits() {
    let deep_ok = format!("{}x\n", "- ".repeat(9_990));
    assert_eq!(strict(&deep_ok).len(), 1);
    let too_deep = format!("{}x\n", "- ".repeat(10_001));
    assert_eq!(
        strict_err(&too_deep).message,
        "yaml: exceeded max depth of 10000"
    );
    let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
    let mut prev = 'a';
    for c in 'b'..='z' {
        let refs = vec![format!("*{prev}"); 10].join(", ");
        bomb.push_str(&format!("{c}: &{c} [{refs}]\n"));
        prev = c;
    }
    assert_eq!(
        strict_err(&bomb).message,
        "yaml: document contains excessive aliasing"
    );
    assert_eq!(
        lenient_err(&bomb),
        "yaml: document contains excessive aliasing"
    );
}

#[test]
fn go_repr_matches_fmt() {
    let mut m = Mapping::new();
    m.insert(
        "b".into(),
        Value::Seq(vec![Value::Null, Value::Float(f64::INFINITY)]),
    );
    m.insert("a".into(), Value::UInt(u64::MAX));
    m.insert("c".into(), s("x\u{a0}\"\n"));
    m.insert("d".into(), Value::Float(1e21));
    assert_eq!(
        go_repr(&Value::Map(m)),
        "map[string]interface {}{\"a\":0xffffffffffffffff, \"b\":[]interface \
         {}{interface {}(nil), +Inf}, \"c\":\"x\\u00a0\\\"\\n\", \"d\":1e+21}"
    );
    assert_eq!(go_format_float(123_456.0, false), "123456");
    assert_eq!(go_format_float(1_234_567.0, false), "1.234567e+06");
    assert_eq!(go_format_float(0.0001, false), "0.0001");
    assert_eq!(go_format_float(-1.5e-7, false), "-1.5e-07");
    assert_eq!(
        go_format_float(1.234_567_890_123_456_8e29, true),
        "1.2345679e+29"
    );
}

#[test]
fn internal_helpers() {
    assert_eq!(go_base64_decode("aGVsbG8="), Some(b"hello".to_vec()));
    assert_eq!(go_base64_decode("aGVs\nbG8="), Some(b"hello".to_vec()));
    assert_eq!(go_base64_decode("aGVsbG8"), None);
    assert_eq!(go_base64_decode("a=Vs"), None);
    assert_eq!(go_lossy_utf8(b"a\xe2\x82b"), "a\u{fffd}\u{fffd}b");
    assert!(go_underscore_ok("1_0") && !go_underscore_ok("_1") && !go_underscore_ok("1_"));
    assert_eq!(go_parse_int("-0x8000000000000000"), Some(i64::MIN));
    assert_eq!(go_parse_int("0"), Some(0));
    assert_eq!(go_parse_uint("+1"), None);
}

#[test]
fn a_dash_ended_by_a_flow_indicator_is_a_string() {
    // libyaml reads `-` before `,`, `]` or `}` as a plain scalar; saphyr
    // refuses it
    let v = spec("  a: {disk: -}\n  b: [-, x, -]\n  c: {k: [-]}\n");
    assert_eq!(v.get("a").and_then(|m| m.get("disk")), Some(&s("-")));
    assert_eq!(v.get("b"), Some(&Value::Seq(vec![s("-"), s("x"), s("-")])));
    assert_eq!(
        lenient("k: {a: -}\n")[0].get("k").and_then(|m| m.get("a")),
        Some(&s("-"))
    );
}

#[test]
fn tabs_in_block_scalar_indentation() {
    // libyaml refuses a tab where it reads indentation
    let err = |src: &str| match parse_documents_strict(src) {
        Ok(v) => panic!("parsed {v:?} from {src:?}"),
        Err(e) => e.message,
    };
    let msg = "yaml: line 2: found a tab character where an indentation space is expected";
    assert_eq!(err("x: 1\nk: |\n  \tfirst\n"), msg);
    assert_eq!(err("x: 1\nk: >\n\n  \tafter a blank line\n"), msg);
    assert_eq!(err("x: 1\nk: |\n    a\n  \tless indented\n"), msg);
    // a tab inside the content is text; an empty block scalar ends where
    // the next entry starts
    let v = spec("  a: |\n    x\n    \ty\n  c: |\n  d: \"p\n   \tq\"\n");
    assert_eq!(v.get("a"), Some(&s("x\n\ty\n")));
    assert_eq!(v.get("c"), Some(&s("")));
    assert_eq!(v.get("d"), Some(&s("p q")));
}

#[test]
fn typed_scalars_keep_the_text_they_do_not_print_as() {
    let docs = parse_documents_strict_marking_empty_nulls(
        "metadata:\n  name: p\n  annotations:\n    a: 0600\nspec:\n  mode: 0600\n  port: 80\n  \
         ratio: 1.50\n  half: 0.5\n  flag: True\n  on: true\n  none: ~\n  nul: null\n  \
         day: 2001-12-14\n  quoted: \"0600\"\n  tagged: !!int 0600\n  list: [1, 0x1F, {x: +1}]\n  \
         base: &b 007\n  copy: *b\n  merged:\n    <<: {m: 010}\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let key = |k: &str| PathSeg::Key(k.to_owned());
    let at = |p: &[&str]| -> Vec<PathSeg> { p.iter().map(|k| key(k)).collect() };
    let mut list = at(&["spec", "list"]);
    list.push(PathSeg::Index(1));
    let mut inner = at(&["spec", "list"]);
    inner.extend([PathSeg::Index(2), key("x")]);
    let expected: Vec<(Vec<PathSeg>, String)> = vec![
        (at(&["spec", "mode"]), "0600".into()),
        (at(&["spec", "ratio"]), "1.50".into()),
        (at(&["spec", "flag"]), "True".into()),
        (at(&["spec", "none"]), "~".into()),
        (at(&["spec", "day"]), "2001-12-14".into()),
        (at(&["spec", "tagged"]), "0600".into()),
        (list, "0x1F".into()),
        (inner, "+1".into()),
        // the anchor's own text; alias copies and merged keys keep none
        (at(&["spec", "base"]), "007".into()),
    ];
    assert_eq!(docs.len(), 1);
    assert_eq!(docs[0].written, expected);
    // parsing without marking keeps nothing
    assert_eq!(
        parse_documents_strict("spec:\n  mode: 0600\n").map(|d| d.len()),
        Ok(1)
    );
}

#[test]
fn quoted_scalars_continue_at_any_indentation() {
    // libyaml folds a continuation line of a quoted scalar wherever it
    // starts; saphyr wants it past the enclosing block
    let v = spec("  a: 'x\n y'\n  b: \"p\n q \\\n r\"\n  c: 'é\nb'  # c\n  d: 'x\n\n y'\n");
    assert_eq!(v.get("a"), Some(&s("x y")));
    assert_eq!(v.get("b"), Some(&s("p q r")));
    assert_eq!(v.get("c"), Some(&s("é b")));
    assert_eq!(v.get("d"), Some(&s("x\ny")));
    let v = spec("  - k: 'a\n  b'\n    n: \"c\n d\"\n");
    assert_eq!(v, Value::Seq(vec![strict("k: a b\nn: c d\n")[0].clone()]));
    // kustomization files (go-yaml v2) too
    assert_eq!(
        lenient("a:\n- b: 'x\n  y'\n")[0],
        lenient("a:\n- b: x y\n")[0]
    );
    // an unclosed scalar and a document marker inside one still fail
    let msg = "yaml: line 6: found unexpected end of stream";
    assert_eq!(
        strict_err(&format!("{HEAD}spec:\n  a: 'open\n")).message,
        msg
    );
    assert_eq!(
        strict_err(&format!("{HEAD}spec:\n  a: 'x\n---\n  y'\n")).message,
        msg
    );
}

#[test]
fn a_map_merged_into_itself_adds_nothing() {
    // go-yaml registers an anchor where its collection starts, and kyaml's
    // DeAnchor then merges the map with itself
    assert_eq!(
        spec("  a: &x\n    <<: *x\n    k: 1\n"),
        spec("  a:\n    k: 1\n")
    );
    assert_eq!(spec("  a: &x {<<: *x, k: v}\n"), spec("  a: {k: v}\n"));
    assert_eq!(
        spec("  y: &y {q: 1}\n  a: &x\n    <<: [*y, *x]\n    k: 1\n  b: *x\n"),
        spec("  y: {q: 1}\n  a: {k: 1, q: 1}\n  b: {k: 1, q: 1}\n")
    );
    // anything else inside its own anchor never ends (kustomize overflows
    // its stack): an error
    for body in ["  a: &x\n    k: 1\n    b: *x\n", "  a: &x [1, *x]\n"] {
        let e = strict_err(&format!("{HEAD}spec:\n{body}"));
        assert_eq!(e.message, "yaml: anchor 'x' value contains itself");
    }
    // go-yaml v2 (kustomization files) refuses a self merge too
    assert_eq!(
        lenient_err("commonLabels: &c\n  <<: *c\n  a: b\n"),
        "yaml: anchor 'c' value contains itself"
    );
}

#[test]
fn a_question_mark_ends_a_plain_scalar_in_flow_collections() {
    let err = |body: &str| strict_err(&format!("{HEAD}spec:\n{body}")).message;
    assert_eq!(
        err("  a: {\n    b: http://x/y?z=1,\n  }\n"),
        "yaml: line 5: did not find expected ',' or '}'"
    );
    assert_eq!(
        err("  a: [x?y]\n"),
        "yaml: line 5: did not find expected ',' or ']'"
    );
    assert_eq!(
        err("  a: [b, {c: d?e}]\n"),
        "yaml: line 5: did not find expected ',' or '}'"
    );
    assert_eq!(
        lenient_err("a: [x?y]\n"),
        "yaml: did not find expected ',' or ']'"
    );
    // outside flow collections, and quoted, it is text
    let v = spec("  a: x?y\n  b: ['x?y', \"?\"]\n");
    assert_eq!(v.get("a"), Some(&s("x?y")));
    assert_eq!(v.get("b"), Some(&Value::Seq(vec![s("x?y"), s("?")])));
}
