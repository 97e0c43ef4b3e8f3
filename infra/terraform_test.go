package infra

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"

	"github.com/baton-run/baton/a2aserver"
	"github.com/baton-run/baton/functions"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// What the code needs from Firestore, as the packages that query declare it
// next to their queries.
type (
	fieldIndex = sessionstore.FieldIndex
	ttlField   = sessionstore.TTL
)

var (
	fieldIndexes  = slices.Concat(sessionstore.FieldIndexes, a2aserver.FieldIndexes)
	ttlFields     = slices.Concat(toolcallback.TTLs, a2aserver.TTLs)
	queriedFields = mergeFields(sessionstore.QueriedFields, toolcallback.QueriedFields, a2aserver.QueriedFields)
)

func mergeFields(lists ...map[string][]string) map[string][]string {
	out := map[string][]string{}
	for _, l := range lists {
		for cg, fields := range l {
			out[cg] = append(out[cg], fields...)
		}
	}
	return out
}

// What the environment of a deployed function may leave out, and why.
var (
	// defaultedEnv are variables of functions.EnvVars the deployment
	// deliberately leaves to their default.
	defaultedEnv = map[string]string{
		"BATON_DEV_IDENTITY":          "local runner only; its default, false, is the only safe value",
		"FIREBASE_AUTH_EMULATOR_HOST": "local runner and tests only; set, the Admin SDK accepts unsigned tokens",
	}
	// platformEnv are variables Cloud Run sets and reserves.
	platformEnv = map[string]string{
		"K_SERVICE": "set by Cloud Run",
	}
)

// modes are the variable settings every check runs under.
var modes = []struct {
	name string
	vars map[string]cty.Value
}{
	{name: "Gemini API key", vars: nil},
	{name: "Vertex AI", vars: map[string]cty.Value{"use_vertex_ai": cty.True}},
	{name: "revocation checks", vars: map[string]cty.Value{"check_revoked": cty.True}},
	{name: "enqueue, long invocations", vars: map[string]cty.Value{
		"lease_policy":               cty.StringVal("enqueue"),
		"lease_max_wait_seconds":     cty.NumberIntVal(45),
		"request_timeout_seconds":    cty.NumberIntVal(60),
		"invocation_timeout_seconds": cty.NumberIntVal(900),
		"sweep_timeout_seconds":      cty.NumberIntVal(1200),
	}},
}

func forEachMode(t *testing.T, check func(t *testing.T, m *tfModule)) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			check(t, loadModule(t, terraformDir(t), mode.vars))
		})
	}
}

// deployedFunction is one google_cloudfunctions2_function instance.
type deployedFunction struct {
	tfInstance
	entryPoint string
	name       string
	env        map[string]string
	unknownEnv map[string]bool // set, to a value known only at apply
	secretEnv  []string
	timeout    time.Duration
}

// inOrder returns the functions sorted by entry point, for stable messages.
func inOrder(fns map[string]deployedFunction) []deployedFunction {
	var out []deployedFunction
	for _, ep := range sortedKeys(fns) {
		out = append(out, fns[ep])
	}
	return out
}

// deployedFunctions returns the functions by entry point.
func deployedFunctions(t *testing.T, m *tfModule) map[string]deployedFunction {
	t.Helper()
	fns := map[string]deployedFunction{}
	for _, in := range m.instances(t, "google_cloudfunctions2_function") {
		build := in.block(t, "build_config")
		svc := in.block(t, "service_config")
		f := deployedFunction{tfInstance: in, entryPoint: build.str(t, "entry_point"), name: in.str(t, "name")}
		if other, dup := fns[f.entryPoint]; dup {
			t.Fatalf("%s and %s both deploy entry point %q", other.addr, in.addr, f.entryPoint)
		}
		f.env, f.unknownEnv = stringMap(t, svc.addr+".environment_variables", svc.value(t, "environment_variables"))
		for _, s := range svc.blocks(t, "secret_environment_variables") {
			f.secretEnv = append(f.secretEnv, s.str(t, "key"))
		}
		f.timeout = time.Duration(svc.num(t, "timeout_seconds")) * time.Second
		fns[f.entryPoint] = f
	}
	return fns
}

// TestTerraformDeploysEveryFunction: every registered function is deployed,
// under its registered name, on runtime go126, and nothing else is.
func TestTerraformDeploysEveryFunction(t *testing.T) {
	forEachMode(t, func(t *testing.T, m *tfModule) {
		fns := deployedFunctions(t, m)
		if diff := cmp.Diff(sorted(functions.Names), sortedKeys(fns)); diff != "" {
			t.Errorf("entry points deployed vs functions.Names (-want +got):\n%s", diff)
		}
		for _, f := range inOrder(fns) {
			if got := f.block(t, "build_config").str(t, "runtime"); got != "go126" {
				t.Errorf("%s runtime = %q, want go126", f.addr, got)
			}
		}
	})
}

// TestTerraformEnvironment: every variable functions.Config reads is set on
// every function (secrets from Secret Manager), or deliberately left to its
// default; nothing sets BATON_DEV_IDENTITY to true; nothing sets a BATON_
// variable the code does not read; the model is configured in both modes;
// and the resulting environment is one ConfigFromEnv accepts.
func TestTerraformEnvironment(t *testing.T) {
	forEachMode(t, func(t *testing.T, m *tfModule) {
		vertex := m.vars["use_vertex_ai"].True()
		for _, f := range inOrder(deployedFunctions(t, m)) {
			plain := func(name string) bool { _, ok := f.env[name]; return ok }
			secret := func(name string) bool { return slices.Contains(f.secretEnv, name) }
			read := map[string]bool{}
			for _, e := range functions.EnvVars {
				read[e.Name] = true
				switch {
				case platformEnv[e.Name] != "":
					if plain(e.Name) || secret(e.Name) {
						t.Errorf("%s sets %s, which Cloud Run reserves (%s)", f.addr, e.Name, platformEnv[e.Name])
					}
				case e.Secret:
					if !secret(e.Name) {
						t.Errorf("%s: secret %s is not a secret_environment_variables entry", f.addr, e.Name)
					}
					if plain(e.Name) {
						t.Errorf("%s: secret %s is in plain environment_variables", f.addr, e.Name)
					}
				case plain(e.Name):
				case secret(e.Name):
					t.Errorf("%s: %s is not a secret but comes from Secret Manager", f.addr, e.Name)
				case defaultedEnv[e.Name] != "":
					// Deliberately defaulted.
				default:
					t.Errorf("%s does not set %s (required: %v, default %q); set it, or list it in defaultedEnv with the reason", f.addr, e.Name, e.Required, e.Default)
				}
			}
			if v, ok := f.env["BATON_DEV_IDENTITY"]; ok {
				if dev, err := strconv.ParseBool(v); f.unknownEnv["BATON_DEV_IDENTITY"] || err != nil || dev {
					t.Errorf("%s sets BATON_DEV_IDENTITY=%q; it must never be true in a deployment", f.addr, v)
				}
			}
			for _, name := range append(sortedKeys(f.env), f.secretEnv...) {
				if strings.HasPrefix(name, "BATON_") && !read[name] {
					t.Errorf("%s sets %s, which functions.Config does not read", f.addr, name)
				}
			}

			// The model: the genai client reads these itself.
			if vertex {
				if f.env["GOOGLE_GENAI_USE_VERTEXAI"] != "true" || f.env["GOOGLE_CLOUD_LOCATION"] == "" || secret("GOOGLE_API_KEY") {
					t.Errorf("%s in Vertex AI mode: GOOGLE_GENAI_USE_VERTEXAI=%q GOOGLE_CLOUD_LOCATION=%q, API key secret %v; want true, a location, no key",
						f.addr, f.env["GOOGLE_GENAI_USE_VERTEXAI"], f.env["GOOGLE_CLOUD_LOCATION"], secret("GOOGLE_API_KEY"))
				}
			} else {
				if !secret("GOOGLE_API_KEY") || plain("GOOGLE_API_KEY") || plain("GOOGLE_GENAI_USE_VERTEXAI") {
					t.Errorf("%s in API key mode: want GOOGLE_API_KEY from Secret Manager only and no GOOGLE_GENAI_USE_VERTEXAI", f.addr)
				}
			}

			// What Cloud Run would pass: values known only at apply and
			// secrets get stand-ins.
			env := map[string]string{"K_SERVICE": f.name}
			for k, v := range f.env {
				if f.unknownEnv[k] {
					v = "stand-in"
				}
				env[k] = v
			}
			for _, k := range f.secretEnv {
				env[k] = strings.Repeat("s", 64)
			}
			if _, err := functions.ConfigFromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
				t.Errorf("%s: ConfigFromEnv refuses the deployed environment: %v", f.addr, err)
			}
		}
	})
}

// TestTerraformTimeouts: a function that runs the agent (Turn, ToolResult,
// Sweep) has a request timeout longer than one invocation plus, for the
// first two, the work before the stream starts (BATON_REQUEST_TIMEOUT),
// which must itself leave room for the longest wait for a busy session.
func TestTerraformTimeouts(t *testing.T) {
	forEachMode(t, func(t *testing.T, m *tfModule) {
		for _, f := range inOrder(deployedFunctions(t, m)) {
			invocation := envDuration(t, f, "BATON_INVOCATION_TIMEOUT")
			request := envDuration(t, f, "BATON_REQUEST_TIMEOUT")
			if wait := envDuration(t, f, "BATON_LEASE_MAX_WAIT"); wait >= request {
				t.Errorf("%s BATON_LEASE_MAX_WAIT = %v, want less than BATON_REQUEST_TIMEOUT = %v, which bounds it", f.addr, wait, request)
			}
			var least time.Duration
			switch f.entryPoint {
			case functions.NameTurn, functions.NameToolResult, functions.NameSweep, functions.NameA2A:
				// Sweep's own deadline is request + invocation (it waits
				// for the invocations it resumes).
				least = request + invocation
			default:
				continue
			}
			if f.timeout <= least {
				t.Errorf("%s timeout_seconds = %v, want more than %v (before the stream %v, invocation %v)", f.addr, f.timeout, least, request, invocation)
			}
			if f.timeout > time.Hour {
				t.Errorf("%s timeout_seconds = %v, above Cloud Run's 60 min", f.addr, f.timeout)
			}
		}
	})
}

func envDuration(t *testing.T, f deployedFunction, name string) time.Duration {
	t.Helper()
	v, ok := f.env[name]
	if !ok || f.unknownEnv[name] {
		for _, e := range functions.EnvVars {
			if e.Name == name {
				v = e.Default
			}
		}
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s %s=%q: %v", f.addr, name, v, err)
	}
	return d
}

// TestTerraformInvokers: invoker access is granted on the Cloud Run
// services: the browser-facing functions to var.invokers, Sweep to the
// scheduler's service account only, and nobody project-wide.
func TestTerraformInvokers(t *testing.T) {
	forEachMode(t, func(t *testing.T, m *tfModule) {
		fns := deployedFunctions(t, m)
		byService := map[string]string{}
		for ep, f := range fns {
			byService[serviceOf(f.name)] = ep
		}
		members := map[string][]string{}
		for _, in := range m.instances(t, "google_cloud_run_service_iam_member") {
			ep, ok := byService[in.str(t, "service")]
			if !ok {
				t.Errorf("%s grants on %q, not the service of a deployed function", in.addr, in.str(t, "service"))
				continue
			}
			if role := in.str(t, "role"); role != "roles/run.invoker" {
				t.Errorf("%s role = %q, want roles/run.invoker", in.addr, role)
			}
			members[ep] = append(members[ep], in.str(t, "member"))
		}
		for _, typ := range []string{"google_cloud_run_v2_service_iam_member", "google_cloud_run_service_iam_binding", "google_cloud_run_service_iam_policy", "google_cloudfunctions2_function_iam_member", "google_cloudfunctions2_function_iam_binding"} {
			if n := len(m.instances(t, typ)); n > 0 {
				t.Errorf("%d %s: grant invoker access with google_cloud_run_service_iam_member only, so this test sees every grant", n, typ)
			}
		}
		for _, typ := range []string{"google_project_iam_member", "google_project_iam_binding"} {
			for _, in := range m.instances(t, typ) {
				if role := in.str(t, "role"); role == "roles/run.invoker" || role == "roles/cloudfunctions.invoker" {
					t.Errorf("%s grants %s project-wide, which would open Sweep", in.addr, role)
				}
			}
		}

		invokers, _ := stringList(t, "var.invokers", m.vars["invokers"])
		scheduler := schedulerJob(t, m)
		for _, ep := range sortedKeys(fns) {
			want := invokers
			if ep == functions.NameSweep {
				want = []string{"serviceAccount:" + scheduler.block(t, "http_target", "oidc_token").str(t, "service_account_email")}
			}
			if diff := cmp.Diff(sorted(want), sorted(members[ep])); diff != "" {
				t.Errorf("invokers of %s (-want +got):\n%s", ep, diff)
			}
		}
	})
}

// TestTerraformSweepSchedule: Cloud Scheduler POSTs to Sweep with an OIDC
// token addressed to a URL of Sweep's Cloud Run service, and Sweep expects
// exactly that audience and the scheduler's account.
func TestTerraformSweepSchedule(t *testing.T) {
	forEachMode(t, func(t *testing.T, m *tfModule) {
		job := schedulerJob(t, m)
		target := job.block(t, "http_target")
		oidc := target.block(t, "oidc_token")
		sweep, ok := deployedFunctions(t, m)[functions.NameSweep]
		if !ok {
			t.Fatal("Sweep is not deployed")
		}
		if got := target.str(t, "http_method"); got != "POST" {
			t.Errorf("%s http_method = %q, want POST", target.addr, got)
		}
		if got, want := target.str(t, "uri"), serviceURI(sweep.name); got != want {
			t.Errorf("%s uri = %q, want Sweep's service URI %q", target.addr, got, want)
		}
		audience := oidc.str(t, "audience")
		// Cloud Run accepts tokens for its run.app URLs; the deterministic
		// one is https://{service}-{project number}.{region}.run.app.
		if want := fmt.Sprintf("https://%s-%s.%s.run.app", sweep.name, testProjectNumber, sweep.str(t, "location")); audience != want && m.vars["sweep_audience"].IsNull() {
			t.Errorf("%s audience = %q, want Sweep's deterministic URL %q", oidc.addr, audience, want)
		}
		for _, f := range inOrder(deployedFunctions(t, m)) {
			if f.env["BATON_SWEEP_AUDIENCE"] != audience || f.unknownEnv["BATON_SWEEP_AUDIENCE"] {
				t.Errorf("%s BATON_SWEEP_AUDIENCE = %q, want the scheduler's audience %q", f.addr, f.env["BATON_SWEEP_AUDIENCE"], audience)
			}
			if email := oidc.str(t, "service_account_email"); f.env["BATON_SWEEP_INVOKER"] != email {
				t.Errorf("%s BATON_SWEEP_INVOKER = %q, want the scheduler's account %q", f.addr, f.env["BATON_SWEEP_INVOKER"], email)
			}
		}
		if deadline, err := time.ParseDuration(job.str(t, "attempt_deadline")); err != nil || deadline < sweep.timeout {
			t.Errorf("%s attempt_deadline = %q, want at least Sweep's timeout %v", job.addr, job.str(t, "attempt_deadline"), sweep.timeout)
		}
	})
}

func schedulerJob(t *testing.T, m *tfModule) tfInstance {
	t.Helper()
	jobs := m.instances(t, "google_cloud_scheduler_job")
	if len(jobs) != 1 {
		t.Fatalf("%d google_cloud_scheduler_job, want 1 (Sweep)", len(jobs))
	}
	return jobs[0]
}

// firestoreField is a google_firestore_field as the checks see it.
type firestoreField struct {
	tfInstance
	collection, field string
	ttl               bool
	indexConfig       bool         // an index_config block is present
	indexes           []fieldIndex // its indexes blocks
}

func firestoreFields(t *testing.T, m *tfModule) []firestoreField {
	t.Helper()
	var out []firestoreField
	for _, in := range m.instances(t, "google_firestore_field") {
		f := firestoreField{tfInstance: in, collection: in.str(t, "collection"), field: in.str(t, "field")}
		f.ttl = len(in.blocks(t, "ttl_config")) > 0
		for _, ic := range in.blocks(t, "index_config") {
			f.indexConfig = true
			for _, ix := range ic.blocks(t, "indexes") {
				scope := "COLLECTION"
				if ix.has("query_scope") {
					scope = ix.str(t, "query_scope")
				}
				f.indexes = append(f.indexes, fieldIndex{CollectionGroup: f.collection, Field: f.field, QueryScope: scope})
			}
		}
		out = append(out, f)
	}
	return out
}

// TestTerraformTTL: every collection that expires in code has its TTL field
// in Terraform, under the same name, with its single-field indexes
// exempted, and Terraform expires nothing else.
func TestTerraformTTL(t *testing.T) {
	m := loadModule(t, terraformDir(t), nil)
	fields := firestoreFields(t, m)
	for _, want := range ttlFields {
		found := false
		for _, f := range fields {
			if f.collection != want.CollectionGroup || f.field != want.Field {
				continue
			}
			found = true
			if !f.ttl {
				t.Errorf("%s (%s.%s) has no ttl_config", f.addr, f.collection, f.field)
			}
			if !f.indexConfig || len(f.indexes) > 0 {
				t.Errorf("%s (%s.%s): want an empty index_config (TTL field exempted from single-field indexes)", f.addr, f.collection, f.field)
			}
		}
		if !found {
			t.Errorf("no google_firestore_field with a TTL for collection group %q field %q", want.CollectionGroup, want.Field)
		}
	}
	for _, f := range fields {
		if f.ttl && !slices.Contains(ttlFields, ttlField{CollectionGroup: f.collection, Field: f.field}) {
			t.Errorf("%s: TTL on %s.%s, which the code does not expire", f.addr, f.collection, f.field)
		}
	}
}

// TestTerraformCompositeIndexes: every composite index the code's queries
// need is declared with the same collection group, scope and fields in
// order, and Terraform declares no other.
func TestTerraformCompositeIndexes(t *testing.T) {
	m := loadModule(t, terraformDir(t), nil)
	var declared []sessionstore.Index
	for _, in := range m.instances(t, "google_firestore_index") {
		ix := sessionstore.Index{CollectionGroup: in.str(t, "collection"), QueryScope: "COLLECTION"}
		if in.has("query_scope") {
			ix.QueryScope = in.str(t, "query_scope")
		}
		for _, f := range in.blocks(t, "fields") {
			if order := f.str(t, "order"); order != "ASCENDING" {
				t.Errorf("%s field %s order = %s, want ASCENDING (what the code's index lists mean)", in.addr, f.str(t, "field_path"), order)
			}
			ix.Fields = append(ix.Fields, f.str(t, "field_path"))
		}
		declared = append(declared, ix)
	}
	want := codeIndexes()
	key := func(ix sessionstore.Index) string {
		return ix.CollectionGroup + " " + ix.QueryScope + " " + strings.Join(ix.Fields, ",")
	}
	var wantKeys, gotKeys []string
	for _, ix := range want {
		wantKeys = append(wantKeys, key(ix))
	}
	for _, ix := range declared {
		gotKeys = append(gotKeys, key(ix))
	}
	if diff := cmp.Diff(sorted(wantKeys), sorted(gotKeys)); diff != "" {
		t.Errorf("composite indexes: code (sessionstore, toolcallback and a2aserver Indexes) vs google_firestore_index (-want +got):\n%s", diff)
	}
}

// codeIndexes lists the composite indexes every package's queries need.
func codeIndexes() []sessionstore.Index {
	return slices.Concat(toolcallback.Indexes, sessionstore.Indexes, a2aserver.Indexes)
}

// TestTerraformFieldIndexes: every single-field index setting a query needs
// is enabled, and no index exemption removes an index a query uses.
func TestTerraformFieldIndexes(t *testing.T) {
	m := loadModule(t, terraformDir(t), nil)
	fields := firestoreFields(t, m)
	for _, want := range fieldIndexes {
		found := false
		for _, f := range fields {
			found = found || slices.Contains(f.indexes, want)
		}
		if !found {
			t.Errorf("no google_firestore_field enables a %s index on %s.%s", want.QueryScope, want.CollectionGroup, want.Field)
		}
	}

	queried := map[string][]string{}
	for cg, fs := range queriedFields {
		queried[cg] = append(queried[cg], fs...)
	}
	for _, ix := range codeIndexes() {
		queried[ix.CollectionGroup] = append(queried[ix.CollectionGroup], ix.Fields...)
	}
	for _, ix := range fieldIndexes {
		queried[ix.CollectionGroup] = append(queried[ix.CollectionGroup], ix.Field)
	}
	for _, f := range fields {
		if f.indexConfig && len(f.indexes) == 0 && slices.Contains(queried[f.collection], f.field) {
			t.Errorf("%s exempts %s.%s from indexing, but a query filters or orders on it", f.addr, f.collection, f.field)
		}
	}
}

// TestTerraformRuntimeRoles: the functions' service account gets Firestore
// data access (and the model in Vertex AI mode) project-wide and nothing
// else; secrets are granted one by one.
func TestTerraformRuntimeRoles(t *testing.T) {
	forEachMode(t, func(t *testing.T, m *tfModule) {
		fns := deployedFunctions(t, m)
		runtime := ""
		for _, f := range inOrder(fns) {
			email := f.block(t, "service_config").str(t, "service_account_email")
			if runtime != "" && email != runtime {
				t.Errorf("%s runs as %s, others as %s", f.addr, email, runtime)
			}
			runtime = email
		}
		allowed := []string{"roles/datastore.user"}
		if m.vars["use_vertex_ai"].True() {
			allowed = append(allowed, "roles/aiplatform.user")
		}
		if m.vars["check_revoked"].True() {
			allowed = append(allowed, "roles/firebaseauth.viewer")
		}
		var got []string
		for _, in := range m.instances(t, "google_project_iam_member") {
			if in.str(t, "member") == "serviceAccount:"+runtime {
				got = append(got, in.str(t, "role"))
			}
		}
		if diff := cmp.Diff(sorted(allowed), sorted(got)); diff != "" {
			t.Errorf("project roles of the runtime account %s (-want +got):\n%s", runtime, diff)
		}
		if n := len(m.instances(t, "google_project_iam_binding")) + len(m.instances(t, "google_project_iam_policy")); n > 0 {
			t.Errorf("%d authoritative project IAM resources: use google_project_iam_member", n)
		}
		for _, in := range m.instances(t, "google_secret_manager_secret_iam_member") {
			if role := in.str(t, "role"); role != "roles/secretmanager.secretAccessor" {
				t.Errorf("%s role = %q, want roles/secretmanager.secretAccessor", in.addr, role)
			}
		}
	})
}

func stringList(t *testing.T, addr string, v cty.Value) ([]string, bool) {
	t.Helper()
	if v.IsNull() || !v.IsWhollyKnown() {
		return nil, false
	}
	var out []string
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		out = append(out, e.AsString())
	}
	return out, true
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
