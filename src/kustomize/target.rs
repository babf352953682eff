//! A kustomization directory under build: loading it and accumulating its
//! resources, generators, components and transformers in kustomize 5.5's
//! order.

use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use std::sync::Arc;

use super::BuildOptions;
pub use super::accumulator::{Accumulator, custom_image_specs};
use super::documents::parse_resources_marking;
use super::error::{Error, Result};
use super::fieldspec::{FieldSpec, TransformerConfig};
use super::fs::FileKind;
use super::function::CatalogFile;
use super::generator::{GenKind, generate};
use super::kustomization::{GeneratorArgs, KUSTOMIZATION_FILE_NAMES, KustKind, Kustomization};
use super::loader::{Loader, is_remote, remote_error};
use super::openapi::Schema;
use super::patches;
use super::plugins;
use super::replacement::TextScalar;
use super::resid::Gvk;
use super::resource::{Behavior, Origin, ResMap, Resource};
use super::transform::{self, SubjectMode};
use super::vars;
use super::yaml::{Mapping, Value, parse};

/// State shared by every kustomization of one build.
pub struct BuildCtx<'o> {
    pub opts: &'o BuildOptions,
    /// The OpenAPI schema chosen by an `openapi:` field. As in kustomize,
    /// the first kustomization loaded with the field (the top level first)
    /// chooses it for the rest of the build.
    chosen_schema: RefCell<Option<Arc<Schema>>>,
    /// Whether kyaml would have parsed (or flagged for parsing) its builtin
    /// schema by now: a strategic-merge patch was merged, or a resource of
    /// a type outside kyaml's precomputed scope table was read. A custom
    /// schema a nested kustomization sets is then added to the builtin
    /// one; before that it replaces it.
    builtin_touched: Cell<bool>,
    /// Warnings to report with the result.
    warnings: RefCell<Vec<String>>,
}

impl<'o> BuildCtx<'o> {
    pub fn new(opts: &'o BuildOptions) -> BuildCtx<'o> {
        BuildCtx {
            opts,
            chosen_schema: RefCell::new(None),
            builtin_touched: Cell::new(false),
            warnings: RefCell::new(Vec::new()),
        }
    }

    /// Records a warning for [`super::Rendered::warnings`].
    pub fn warn(&self, w: String) {
        self.warnings.borrow_mut().push(w);
    }

    /// The warnings recorded so far.
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut *self.warnings.borrow_mut())
    }

    /// Notes what a resource's type does to kyaml's schema state (see
    /// `builtin_touched`).
    pub fn note_resource_type(&self, r: &Resource) {
        if !self.builtin_touched.get()
            && !super::openapi::kyaml_precomputed_scope(&r.api_version(), &r.kind())
        {
            self.builtin_touched.set(true);
        }
    }

    /// Notes the strategic-merge patches merged into `m` (see
    /// `builtin_touched`).
    pub fn note_merges(&self, m: &mut ResMap) {
        if std::mem::take(&mut m.smp_merged) {
            self.builtin_touched.set(true);
        }
    }

    /// The schema for strategic merges: the chosen one, else the builtin.
    pub fn schema(&self) -> Arc<Schema> {
        self.chosen_schema
            .borrow()
            .clone()
            .unwrap_or_else(Schema::builtin)
    }
}

/// One loaded kustomization (or component).
pub struct Target<'o> {
    pub loader: Loader,
    pub kust: Kustomization,
    /// The kustomization file's name in its directory.
    pub file_name: String,
    pub ctx: &'o BuildCtx<'o>,
    /// Root of the top-level kustomization (origins are relative to it).
    pub top_root: PathBuf,
    /// buildMetadata in force (inherited from the top).
    pub build_metadata: Vec<String>,
    /// This layer's `catalogs:`, read and checked by the build's catalog
    /// resolver (KEP-2906: catalogs are local to a layer).
    pub catalogs: Vec<CatalogFile>,
}

/// Reads a layer's `catalogs:` (local files only) and has the build's
/// resolver check them (trust, validity).
fn load_catalogs(
    loader: &Loader,
    kust: &Kustomization,
    kust_file: &std::path::Path,
    ctx: &BuildCtx<'_>,
) -> Result<Vec<CatalogFile>> {
    if kust.catalogs.is_empty() {
        return Ok(Vec::new());
    }
    let mut files = Vec::new();
    for entry in &kust.catalogs {
        if is_remote(entry) {
            return Err(Error::remote(format!(
                "{}: catalog '{entry}' is a remote reference: krmsync never fetches catalogs \
                 while rendering; localize it first (copy the catalog next to the kustomization \
                 and reference the local file)",
                kust_file.display()
            )));
        }
        let path = loader
            .resolve_file(entry)
            .map_err(|e| e.context(format!("{}: catalog '{entry}'", kust_file.display())))?;
        let content = loader
            .read(entry)
            .map_err(|e| e.context(format!("{}: catalog '{entry}'", kust_file.display())))?;
        files.push(CatalogFile {
            entry: entry.clone(),
            path,
            referenced_by: kust_file.to_path_buf(),
            content,
        });
    }
    let resolver = ctx.opts.catalog_resolver.as_ref().ok_or_else(|| {
        Error::invalid(format!(
            "{}: references function catalogs ({}), but this build resolves no catalogs \
             (krmsync build needs --trusted-catalog)",
            kust_file.display(),
            kust.catalogs.join(", ")
        ))
    })?;
    resolver.check(&files).map_err(Error::invalid)?;
    Ok(files)
}

impl super::plugins::Layer for Target<'_> {
    fn loader(&self) -> &Loader {
        &self.loader
    }
    fn opts(&self) -> &BuildOptions {
        self.ctx.opts
    }
    fn warn(&self, message: String) {
        self.ctx.warn(message);
    }
    fn schema(&self) -> Arc<Schema> {
        self.ctx.schema()
    }
    fn catalogs(&self) -> &[CatalogFile] {
        &self.catalogs
    }
    fn catalog_entries(&self) -> &[String] {
        &self.kust.catalogs
    }
    fn validators(&self) -> &[String] {
        &self.kust.validators
    }
    fn config_origin(&self, kind: &str, name: &str, config_file: Option<&str>) -> Option<Origin> {
        Target::config_origin(self, kind, name, config_file)
    }
    fn accumulate_configs(
        &self,
        first: Vec<Resource>,
        paths: Vec<String>,
    ) -> Result<Vec<Resource>> {
        // a layer of its own, of only those paths, in this layer's context
        let sub = Target {
            loader: self.loader.clone(),
            kust: Kustomization {
                resources: paths,
                ..Default::default()
            },
            file_name: self.file_name.clone(),
            ctx: self.ctx,
            top_root: self.top_root.clone(),
            build_metadata: self.build_metadata.clone(),
            catalogs: self.catalogs.clone(),
        };
        let mut ra = Accumulator::new();
        for r in first {
            ra.resources.append(r)?;
        }
        // only the resources, and without the `accumulating resources`
        // context kustomize gives the kustomization's own
        sub.accumulate_resources(&mut ra)?;
        Ok(ra.resources.into_resources())
    }
}

impl<'o> Target<'o> {
    /// Loads the kustomization in the loader's root.
    pub fn load(
        loader: Loader,
        ctx: &'o BuildCtx<'o>,
        top_root: PathBuf,
        build_metadata: Option<Vec<String>>,
    ) -> Result<Target<'o>> {
        let root = loader.root().to_path_buf();
        let mut found = Vec::new();
        for name in KUSTOMIZATION_FILE_NAMES {
            if loader.fs().kind(&root.join(name)) == Some(FileKind::File) {
                found.push(name);
            }
        }
        let file_name = match found.as_slice() {
            [] => {
                return Err(Error::io(format!(
                    "unable to find one of 'kustomization.yaml', 'kustomization.yml' or 'Kustomization' in directory '{}'",
                    root.display()
                )));
            }
            [one] => one.to_string(),
            _ => {
                return Err(Error::invalid(format!(
                    "Found multiple kustomization files under: {}",
                    root.display()
                )));
            }
        };
        let path = root.join(&file_name);
        let text = loader.read_string(&file_name)?;
        let docs = parse::parse_documents(&text)
            .map_err(|e| Error::invalid(format!("{}: {}", path.display(), e.message)))?;
        let doc = docs
            .into_iter()
            .find(|d| !d.is_null())
            .unwrap_or(Value::Null);
        // `kustomize build` refuses a kustomization of nothing but its type
        // (`kustomize localize` takes it)
        if super::kustomization::is_empty_document(&doc) {
            return Err(Error::invalid(format!(
                "kustomization file '{}' is empty",
                path.display()
            )));
        }
        let kust = Kustomization::decode(&doc, &path.display().to_string())?;
        // kustomize chooses a schema only for a `path`, or a `version`
        // that is not empty; other keys are not read
        let chooses = kust
            .openapi
            .iter()
            .any(|(k, v)| k == "path" || (k == "version" && !v.is_empty()));
        if chooses {
            // kyaml adds a custom schema to the builtin one only when it
            // had parsed (or flagged) the builtin before; the top level
            // sets its schema before anything is read
            let nested = build_metadata.is_some() && ctx.builtin_touched.get();
            let schema = load_openapi(&loader, &kust.openapi, nested)?;
            let mut chosen = ctx.chosen_schema.borrow_mut();
            if chosen.is_none() {
                *chosen = Some(schema);
            }
        }
        let build_metadata = build_metadata.unwrap_or_else(|| kust.build_metadata.clone());
        let catalogs = load_catalogs(&loader, &kust, &path, ctx)?;
        Ok(Target {
            loader,
            kust,
            file_name,
            ctx,
            top_root,
            build_metadata,
            catalogs,
        })
    }

    fn origin_path(&self, rel: &str) -> String {
        let abs = self.loader.join(rel);
        Loader::relative_to(&abs, &self.top_root)
    }

    /// Origins are tracked whenever `buildMetadata` asks for anything.
    fn wants_origin(&self) -> bool {
        !self.build_metadata.is_empty()
    }

    /// The origin of a builtin generator/transformer configured in this
    /// kustomization file (or in `config_file`, for plugin configs).
    pub fn config_origin(
        &self,
        kind: &str,
        name: &str,
        config_file: Option<&str>,
    ) -> Option<Origin> {
        self.wants_origin().then(|| Origin {
            configured_in: config_file
                .map(str::to_string)
                .unwrap_or_else(|| self.origin_path(&self.file_name)),
            configured_by_kind: kind.to_string(),
            configured_by_name: name.to_string(),
            ..Default::default()
        })
    }

    /// Records that a transformer ran over every resource accumulated so far
    /// (kustomize annotates all of them, changed or not).
    fn record(&self, ra: &mut Accumulator, kind: &str) {
        let o = self.config_origin(kind, "", None);
        ra.record_transformer(o);
    }

    /// Accumulates this kustomization into `ra`.
    pub fn accumulate(&self, ra: &mut Accumulator) -> Result<()> {
        self.accumulate_resources(ra)
            .map_err(|e| e.context("accumulating resources"))?;
        // Without `configurations:` a kustomization contributes kustomize's
        // default field specs. With it, the files are merged into the
        // defaults the way kustomize merges field specs (see
        // `TransformerConfig::merge`): a file's `metadata/name` of kind Foo
        // takes the place of the default `metadata/name` of every kind.
        let mut custom = TransformerConfig::default();
        for c in &self.kust.configurations {
            let text = self.loader.read_string(c)?;
            let docs = parse::parse_documents(&text)
                .map_err(|e| Error::invalid(format!("{c}: {}", e.message)))?;
            // kustomize reads these with UnmarshalStrict: a repeated key is
            // an error (the resource reader reports it the same way)
            if let Err(e) = parse::parse_documents_strict(&text)
                && e.message.contains("already defined")
            {
                return Err(Error::invalid(format!(
                    "{c}: error converting YAML to JSON: {}",
                    e.message
                )));
            }
            // only the first document counts (sigs.k8s.io/yaml)
            if let Some(d) = docs.first() {
                plugins::config::check_transformer_config(d)
                    .map_err(|e| Error::invalid(format!("{c}: {e}")))?;
                let tc = TransformerConfig::from_value(d, c)?;
                custom.merge(&tc)?;
            }
        }
        let own = if self.kust.configurations.is_empty() {
            TransformerConfig::shared_defaults()
        } else {
            // kustomize merges the defaults and the files, then merges that
            // into the (empty) configuration of this layer
            let mut d = TransformerConfig::defaults();
            d.merge(&custom)?;
            let mut own = TransformerConfig::default();
            own.merge(&d)?;
            Arc::new(own)
        };
        ra.merge_config(&own)?;
        for crd in &self.kust.crds {
            let tc = plugins::config_from_crd(&self.loader, crd)?;
            ra.merge_config(&Arc::new(tc))?;
        }
        self.run_generators(ra)?;
        self.accumulate_components(ra)
            .map_err(|e| e.context("accumulating components"))?;
        self.run_transformers(ra)?;
        if !self.kust.validators.is_empty() {
            plugins::run_validators(self, ra)?;
        }
        vars::merge_vars(&mut ra.resources, &self.kust.vars, &mut ra.vars)
            .map_err(|e| e.context(format!("merging vars {}", vars::go_list(&self.kust.vars))))?;
        // what generators, plugins and patches of this layer did to kyaml's
        // schema state (see `BuildCtx::builtin_touched`)
        self.ctx.note_merges(&mut ra.resources);
        for r in ra.resources.resources() {
            if self.ctx.builtin_touched.get() {
                break;
            }
            self.ctx.note_resource_type(r);
        }
        Ok(())
    }

    fn accumulate_resources(&self, ra: &mut Accumulator) -> Result<()> {
        for entry in &self.kust.resources {
            if is_remote(entry) {
                return Err(remote_error(
                    &self.loader.root().join(&self.file_name),
                    entry,
                ));
            }
            match self.loader.kind(entry) {
                Some(FileKind::Dir) => {
                    let child = self.loader.child(entry).map_err(|e| {
                        e.context(format!(
                            "accumulation err='accumulating resources from '{entry}': '{}' must resolve to a file'",
                            self.loader.join(entry).display()
                        ))
                    })?;
                    let mut sub = Accumulator::new();
                    self.accumulate_dir(child, &mut sub, false, entry)?;
                    ra.merge(sub).map_err(|e| {
                        e.context(format!(
                            "accumulation err='accumulating resources from '{entry}': '{}' must resolve to a file': recursed merging from path '{}'",
                            self.loader.join(entry).display(),
                            self.loader.join(entry).display()
                        ))
                    })?;
                }
                Some(FileKind::File) => {
                    let text = self
                        .loader
                        .read_string(entry)
                        .map_err(|e| e.context(format!("accumulating resources from '{entry}'")))?;
                    let docs = parse_resources_marking(&text, entry)
                        .map_err(|e| e.context(format!("accumulating resources from '{entry}'")))?;
                    let origin = self.wants_origin().then(|| Origin {
                        path: self.origin_path(entry),
                        ..Default::default()
                    });
                    for d in docs {
                        let mut r = Resource::new(d.value);
                        r.empty_nulls = d.empty_nulls;
                        r.quoted = d.quoted;
                        r.scalar_texts = TextScalar::written(&r.obj, d.written);
                        super::function::absorb_build_annotations(&mut r);
                        check_resource(&r, entry)?;
                        self.ctx.note_resource_type(&r);
                        r.origin = origin.clone();
                        ra.resources
                            .append(r)
                            .map_err(|e| e.context(format!("merging resources from '{entry}'")))?;
                    }
                }
                None => {
                    let abs = self.loader.join(entry);
                    return Err(Error::io(format!(
                        "accumulation err='accumulating resources from '{entry}': evalsymlink failure on '{}' : lstat {}: no such file or directory': must build at directory: not a valid directory: evalsymlink failure on '{}' : lstat {}: no such file or directory",
                        abs.display(),
                        abs.display(),
                        abs.display(),
                        abs.display()
                    )));
                }
            }
        }
        Ok(())
    }

    fn accumulate_dir(
        &self,
        loader: Loader,
        ra: &mut Accumulator,
        component: bool,
        entry: &str,
    ) -> Result<()> {
        let root = loader.root().to_path_buf();
        let sub = Target::load(
            loader,
            self.ctx,
            self.top_root.clone(),
            Some(self.build_metadata.clone()),
        )
        .map_err(|e| {
            e.context(format!(
                "couldn't make target for path '{}'",
                root.display()
            ))
        })?;
        if component && sub.kust.kind != KustKind::Component {
            return Err(Error::invalid(format!(
                "expected kind 'Component' for path '{}' but got '{}'",
                root.display(),
                sub.kust.kind.as_str()
            )));
        }
        if !component && sub.kust.kind == KustKind::Component {
            return Err(Error::invalid(format!(
                "expected kind != 'Component' for path '{}'",
                root.display()
            )));
        }
        let _ = entry;
        sub.accumulate(ra).map_err(|e| {
            e.context(format!(
                "recursed accumulation of path '{}'",
                root.display()
            ))
        })?;
        if component {
            // kustomize moves a component's result into a new accumulator,
            // so ids the component made equal are a duplicate error
            let mut merged = ResMap::new();
            merged
                .append_all(std::mem::take(&mut ra.resources))
                .map_err(|e| {
                    e.context(format!("recursed merging from path '{}'", root.display()))
                })?;
            ra.resources = merged;
        }
        Ok(())
    }

    fn accumulate_components(&self, ra: &mut Accumulator) -> Result<()> {
        for entry in &self.kust.components {
            if is_remote(entry) {
                return Err(remote_error(
                    &self.loader.root().join(&self.file_name),
                    entry,
                ));
            }
            let child = self
                .loader
                .child(entry)
                .map_err(|e| e.context("loader.New"))?;
            self.accumulate_dir(child, ra, true, entry)
                .map_err(|e| e.context("accumulateDirectory"))?;
        }
        Ok(())
    }

    fn generator_origin(&self, kind: &str) -> Option<Origin> {
        self.config_origin(kind, "", None)
    }

    fn run_generators(&self, ra: &mut Accumulator) -> Result<()> {
        for args in &self.kust.config_map_generator {
            let args = &marshalled(args, "ConfigMapGenerator")?;
            let mut r = generate(
                args,
                GenKind::ConfigMap,
                self.kust.generator_options.as_ref(),
                &self.loader,
            )?;
            r.origin = self.generator_origin("ConfigMapGenerator");
            absorb(&mut ra.resources, r).map_err(|e| e.context("merging from generator"))?;
        }
        for args in &self.kust.secret_generator {
            let args = &marshalled(args, "SecretGenerator")?;
            let mut r = generate(
                args,
                GenKind::Secret,
                self.kust.generator_options.as_ref(),
                &self.loader,
            )?;
            r.origin = self.generator_origin("SecretGenerator");
            absorb(&mut ra.resources, r).map_err(|e| e.context("merging from generator"))?;
        }
        let globals = self.kust.helm_globals.clone().unwrap_or_default();
        for chart in &self.kust.helm_charts {
            let resources = super::helm::inflate(
                &self.loader,
                self.ctx.opts.helm.as_ref(),
                &globals,
                chart,
                &self.ctx.schema(),
            )?;
            for mut r in resources {
                r.origin = self.generator_origin("HelmChartInflationGenerator");
                absorb(&mut ra.resources, r).map_err(|e| e.context("merging from generator"))?;
            }
        }
        for r in plugins::run_generators(self, &self.kust.generators)? {
            absorb(&mut ra.resources, r).map_err(|e| e.context("merging from generator"))?;
        }
        Ok(())
    }

    fn run_transformers(&self, ra: &mut Accumulator) -> Result<()> {
        let k = &self.kust;
        check_transformer_configs(k)?;
        let schema = &self.ctx.schema();
        if !k.patches_strategic_merge.is_empty() {
            let loaded = patches::load_strategic_merge(&self.loader, &k.patches_strategic_merge)?;
            if loaded.is_empty() {
                // every entry read as empty patch text
                let mut config = String::new();
                let paths: Vec<Value> = k
                    .patches_strategic_merge
                    .iter()
                    .map(|p| Value::from(p.as_str()))
                    .collect();
                let mut m = super::yaml::Mapping::new();
                m.insert("paths".into(), Value::Seq(paths));
                if super::yaml::write_document(&mut config, &Value::Map(m)).is_err() {
                    config.clear();
                }
                return Err(Error::invalid(format!(
                    "trouble configuring builtin PatchStrategicMergeTransformer with config: `\n{config}`: patch appears to be empty; files=[{}], Patch=",
                    k.patches_strategic_merge.join(" ")
                )));
            }
            patches::apply_strategic_merge_by_id(&mut ra.resources, &loaded, schema)?;
            self.record(ra, "PatchStrategicMergeTransformer");
        }
        for p in &k.patches {
            patches::apply_patch_entry(&self.loader, &mut ra.resources, p, schema)?;
            self.record(ra, "PatchTransformer");
        }
        if !k.namespace.is_empty() {
            transform::namespace(
                &mut ra.resources,
                &k.namespace,
                &ra.config.namespace,
                false,
                SubjectMode::DefaultOnly,
                schema,
            )?;
            self.record(ra, "NamespaceTransformer");
        }
        if !k.name_prefix.is_empty() {
            transform::prefix_suffix(
                &mut ra.resources,
                &k.name_prefix,
                "",
                &ra.config.name_prefix,
                &[],
                schema,
            )?;
            self.record(ra, "PrefixTransformer");
        }
        if !k.name_suffix.is_empty() {
            transform::prefix_suffix(
                &mut ra.resources,
                "",
                &k.name_suffix,
                &[],
                &ra.config.name_suffix,
                schema,
            )?;
            self.record(ra, "SuffixTransformer");
        }
        for l in &k.labels {
            // kustomize's order: the entry's fields, the `labels` specs of
            // the configurations, then the defaults the flags select
            let mut specs: Vec<FieldSpec> = Vec::new();
            for f in &l.fields {
                specs.push(FieldSpec::from_value(f, "labels.fields")?);
            }
            let failed = |e: String| Error::invalid(format!("failed to merge labels: {e}"));
            merge_specs(&mut specs, &ra.config.labels).map_err(failed)?;
            if l.include_selectors {
                merge_specs(&mut specs, &ra.config.common_labels).map_err(failed)?;
            } else {
                if l.include_templates {
                    merge_specs(&mut specs, &ra.config.template_labels).map_err(|e| {
                        Error::invalid(format!("failed to merge template fieldSpec: {e}"))
                    })?;
                }
                merge_specs(
                    &mut specs,
                    &[FieldSpec::new(Gvk::default(), "metadata/labels", true)],
                )
                .map_err(failed)?;
            }
            transform::set_map_entries(&mut ra.resources, &l.pairs, &specs)?;
            self.record(ra, "LabelTransformer");
        }
        if !k.common_labels.is_empty() {
            transform::set_map_entries(
                &mut ra.resources,
                &k.common_labels,
                &ra.config.common_labels,
            )?;
            self.record(ra, "LabelTransformer");
        } else if !k.labels.is_empty() {
            // kustomize configures the commonLabels transformer whenever
            // `labels:` is set, empty or not, and records it
            self.record(ra, "LabelTransformer");
        }
        if !k.common_annotations.is_empty() {
            transform::set_map_entries(
                &mut ra.resources,
                &k.common_annotations,
                &ra.config.common_annotations,
            )?;
            self.record(ra, "AnnotationsTransformer");
        }
        for p in &k.patches_json6902 {
            patches::apply_json6902_entry(&self.loader, &mut ra.resources, p)?;
            self.record(ra, "PatchJson6902Transformer");
        }
        if !k.replicas.is_empty() {
            if self.wants_origin() {
                for rep in &k.replicas {
                    transform::replicas(
                        &mut ra.resources,
                        std::slice::from_ref(rep),
                        &ra.config.replicas,
                    )?;
                    self.record(ra, "ReplicaCountTransformer");
                }
            } else {
                transform::replicas(&mut ra.resources, &k.replicas, &ra.config.replicas)?;
            }
        }
        if !k.images.is_empty() {
            let specs = &ra.config.images.clone();
            if self.wants_origin() {
                for img in &k.images {
                    transform::images(&mut ra.resources, std::slice::from_ref(img), specs)?;
                    self.record(ra, "ImageTagTransformer");
                }
            } else {
                transform::images(&mut ra.resources, &k.images, specs)?;
            }
        }
        if !k.replacements.is_empty() {
            plugins::run_replacements(&self.loader, &mut ra.resources, &k.replacements)?;
            self.record(ra, "ReplacementTransformer");
        }
        plugins::run_transformers(self, ra, &k.transformers)?;
        Ok(())
    }
}

/// kustomize configures every builtin transformer a kustomization's fields
/// ask for before it runs any: each config is marshalled to JSON and read
/// back with go-yaml v2, whose reader refuses the characters Go's JSON
/// encoder leaves raw (DEL, C1 controls but NEL, U+FFFE, U+FFFF). A field
/// holding one (written `"\u007f"`) fails the build there, even when a
/// later layer would have overwritten the value it sets. Checked in
/// kustomize's order of the builtins.
fn check_transformer_configs(k: &Kustomization) -> Result<()> {
    fn check(plugin: &str, s: &str) -> Result<()> {
        super::yaml::emit::go_yaml_round_trip(s)
            .map(drop)
            .map_err(|e| Error::invalid(format!("builtin {plugin} marshal: {e}")))
    }
    fn check_value(plugin: &str, v: &Value) -> Result<()> {
        match v {
            Value::String(s) => check(plugin, s),
            Value::Seq(items) => items.iter().try_for_each(|i| check_value(plugin, i)),
            Value::Map(m) => m.iter().try_for_each(|(key, v)| {
                check(plugin, key)?;
                check_value(plugin, v)
            }),
            _ => Ok(()),
        }
    }
    let check_pairs = |plugin: &str, pairs: &[(String, String)]| {
        pairs.iter().try_for_each(|(a, b)| {
            check(plugin, a)?;
            check(plugin, b)
        })
    };
    let check_patch = |plugin: &str, p: &super::kustomization::PatchEntry| {
        check(plugin, &p.path)?;
        check(plugin, &p.patch)?;
        p.target.iter().try_for_each(|t| check_value(plugin, t))
    };
    for p in &k.patches_strategic_merge {
        check("PatchStrategicMergeTransformer", p)?;
    }
    for p in &k.patches {
        check_patch("PatchTransformer", p)?;
    }
    check("NamespaceTransformer", &k.namespace)?;
    check("PrefixTransformer", &k.name_prefix)?;
    check("SuffixTransformer", &k.name_suffix)?;
    for l in &k.labels {
        check_pairs("LabelTransformer", &l.pairs)?;
        for f in &l.fields {
            check_value("LabelTransformer", f)?;
        }
    }
    check_pairs("LabelTransformer", &k.common_labels)?;
    check_pairs("AnnotationsTransformer", &k.common_annotations)?;
    for p in &k.patches_json6902 {
        check_patch("PatchJson6902Transformer", p)?;
    }
    for r in &k.replicas {
        check("ReplicaCountTransformer", &r.name)?;
    }
    for i in &k.images {
        for s in [&i.name, &i.new_name, &i.new_tag, &i.digest, &i.tag_suffix] {
            check("ImageTagTransformer", s)?;
        }
    }
    for r in &k.replacements {
        check_value("ReplacementTransformer", r)?;
    }
    Ok(())
}

/// A generator entry as kustomize's builtin generator receives it: the
/// entry is marshalled and read back with go-yaml v2, which folds a NEL in
/// a literal and refuses DEL, C1 controls, U+FFFE and U+FFFF (for a Secret
/// too, whose printed data is base64 and would never show them).
fn marshalled<'a>(
    args: &'a GeneratorArgs,
    plugin: &str,
) -> Result<std::borrow::Cow<'a, GeneratorArgs>> {
    let mut literals = Vec::with_capacity(args.literals.len());
    let mut changed = false;
    for lit in &args.literals {
        let read = super::yaml::emit::go_yaml_round_trip(lit)
            .map_err(|e| Error::invalid(format!("builtin {plugin} marshal: {e}")))?;
        changed |= matches!(read, std::borrow::Cow::Owned(_));
        literals.push(read.into_owned());
    }
    if !changed {
        return Ok(std::borrow::Cow::Borrowed(args));
    }
    let mut owned = args.clone();
    owned.literals = literals;
    Ok(std::borrow::Cow::Owned(owned))
}

/// kustomize's `FsSlice.MergeAll`: a spec whose path is already there for
/// a kind it selects is skipped, or is a conflict when it differs in
/// `create`.
fn merge_specs(dst: &mut Vec<FieldSpec>, src: &[FieldSpec]) -> std::result::Result<(), String> {
    for s in src {
        match dst
            .iter()
            .find(|d| s.gvk.selects(&d.gvk) && d.path == s.path)
        {
            Some(d) if d.create != s.create => return Err("conflicting fieldspecs".into()),
            Some(_) => {}
            None => dst.push(s.clone()),
        }
    }
    Ok(())
}

fn check_resource(r: &Resource, file: &str) -> Result<()> {
    match super::documents::missing_metadata(&r.obj) {
        Some(problem) => Err(Error::invalid(format!(
            "accumulating resources from '{file}': {problem}"
        ))),
        None => Ok(()),
    }
}

/// The schema an `openapi:` field selects. A custom schema replaces the
/// builtin one, unless `nested` (a nested kustomization or component, after
/// kyaml had parsed or flagged its builtin schema): then it is added to it.
fn load_openapi(loader: &Loader, spec: &[(String, String)], nested: bool) -> Result<Arc<Schema>> {
    let mut version = None;
    let mut custom = None;
    for (k, v) in spec {
        match k.as_str() {
            "version" => version = Some(v.as_str()),
            "path" => {
                let text = loader.read_string(v)?;
                let docs = parse::parse_documents(&text)
                    .map_err(|e| Error::invalid(format!("openapi schema '{v}': {}", e.message)))?;
                custom = Some(docs.into_iter().next().unwrap_or(Value::Null));
            }
            // kustomize reads only these two keys
            _ => {}
        }
    }
    match (nested, version, &custom) {
        (true, None, Some(doc)) => Schema::merged_with_builtin(doc)
            .map(Arc::new)
            .map_err(Error::invalid),
        _ => Schema::for_openapi_field(version, custom.as_ref()).map_err(Error::invalid),
    }
}

/// A `data` map as kustomize reads it for a merge (kyaml's `GetDataMap`):
/// each value is its scalar's text, `""` for null, a map or a list.
fn string_map_of(v: Option<&Value>) -> Mapping {
    v.and_then(Value::as_map)
        .into_iter()
        .flatten()
        .map(|(k, v)| {
            let text = match v {
                Value::Map(_) | Value::Seq(_) => String::new(),
                other => other.scalar_to_string().unwrap_or_default(),
            };
            (k.clone(), Value::String(text))
        })
        .collect()
}

/// Adds a generated resource, honouring its behavior (create/merge/replace).
pub fn absorb(m: &mut ResMap, mut r: Resource) -> Result<()> {
    let id = r.cur_id();
    let matches = m.find_any(&id);
    match matches.as_slice() {
        [] => match r.behavior {
            Behavior::Merge | Behavior::Replace => Err(Error::invalid(format!(
                "id {} does not exist; cannot merge or replace",
                go_resid(&id)
            ))),
            Behavior::Create | Behavior::Unspecified => m.append(r),
        },
        [i] => {
            let i = *i;
            let old = m.resources()[i].clone();
            match r.behavior {
                Behavior::Create | Behavior::Unspecified => {
                    return Err(Error::invalid(format!(
                        "id {} exists; behavior must be merge or replace",
                        go_resid(&id)
                    )));
                }
                Behavior::Replace => copy_merge_meta(&mut r, &old),
                Behavior::Merge => {
                    copy_merge_meta(&mut r, &old);
                    for field in ["data", "binaryData"] {
                        let mut merged = string_map_of(old.obj.get(field));
                        for (k, v) in string_map_of(r.obj.get(field)) {
                            merged.insert(k, v);
                        }
                        if let Some(obj) = r.obj.as_map_mut()
                            && (!merged.is_empty() || obj.contains_key(field))
                        {
                            obj.insert(field.to_string(), Value::Map(merged));
                        }
                    }
                    if old.origin.is_some() {
                        r.origin = old.origin.clone();
                    }
                }
            }
            m.replace_at(i, r);
            Ok(())
        }
        _ => Err(Error::invalid(format!(
            "found multiple objects that could accept merge of {id}"
        ))),
    }
}

fn go_resid(id: &super::resid::ResId) -> String {
    format!(
        "resid.ResId{{Gvk:resid.Gvk{{Group:\"{}\", Version:\"{}\", Kind:\"{}\", isClusterScoped:false}}, Name:\"{}\", Namespace:\"{}\"}}",
        id.gvk.group, id.gvk.version, id.gvk.kind, id.name, id.namespace
    )
}

/// kustomize's `CopyMergeMetaDataFieldsFrom`: labels and annotations merged
/// (new values win), name/namespace and build bookkeeping from the old one.
fn copy_merge_meta(r: &mut Resource, old: &Resource) {
    for field in ["labels", "annotations"] {
        let mut merged = string_map_of(old.obj.get_path(&["metadata", field]));
        for (k, v) in string_map_of(r.obj.get_path(&["metadata", field])) {
            merged.insert(k, v);
        }
        if let Some(meta) = r.obj.ensure_map_path(&["metadata"]) {
            if merged.is_empty() {
                meta.shift_remove(field);
            } else {
                meta.insert(field.to_string(), Value::Map(merged));
            }
        }
    }
    let name = old.name().to_string();
    r.set_name(&name);
    let ns = old.namespace().to_string();
    if ns.is_empty() {
        if let Some(meta) = r.obj.get_mut("metadata").and_then(Value::as_map_mut) {
            meta.shift_remove("namespace");
        }
    } else {
        r.set_namespace(&ns);
    }
    r.prev_ids = old.prev_ids.clone();
    r.name_prefixes = old.name_prefixes.clone();
    r.name_suffixes = old.name_suffixes.clone();
    r.needs_hash = old.needs_hash && r.needs_hash;
    r.ref_var_names = old.ref_var_names.clone();
    // the transformations annotation is merged like any other: the new
    // resource's own record wins, else the old one's stays
    if r.transformations.is_empty() {
        r.transformations = old.transformations.clone();
    }
}
