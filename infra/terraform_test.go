package infra

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/baton-run/baton/a2aserver"
	"github.com/baton-run/baton/functions"
	"github.com/baton-run/baton/ledger"
	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/sessionstore"
)

// What the code needs from Firestore, as the packages that query declare it
// next to their queries.
type (
	fieldIndex = sessionstore.FieldIndex
	ttlField   = sessionstore.TTL
)

var (
	fieldIndexes  = slices.Concat(sessionstore.FieldIndexes, a2aserver.FieldIndexes)
	ttlFields     = slices.Concat(sessionstore.TTLs, ledger.TTLs, limits.TTLs, a2aserver.TTLs)
	queriedFields = mergeFields(sessionstore.QueriedFields, ledger.QueriedFields, a2aserver.QueriedFields, limits.QueriedFields)
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

// deployedFunction is one google_cloud_run_v2_service instance.
type deployedFunction struct {
	tfInstance
	entryPoint string // its FUNCTION_TARGET
	name       string
	image      string
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

// deployedFunctions returns the services by the entry point each serves.
func deployedFunctions(t *testing.T, m *tfModule) map[string]deployedFunction {
	t.Helper()
	fns := map[string]deployedFunction{}
	for _, in := range m.instances(t, "google_cloud_run_v2_service") {
		tmpl := in.block(t, "template")
		container := tmpl.block(t, "containers")
		f := deployedFunction{tfInstance: in, name: in.str(t, "name"), image: container.str(t, "image"), env: map[string]string{}, unknownEnv: map[string]bool{}}
		for _, e := range container.blocks(t, "env") {
			name := e.str(t, "name")
			if _, dup := f.env[name]; dup || slices.Contains(f.secretEnv, name) {
				t.Errorf("%s sets %s twice", in.addr, name)
			}
			if vs := e.blocks(t, "value_source"); len(vs) > 0 {
				ref := e.block(t, "value_source", "secret_key_ref")
				if !ref.has("secret") || !ref.has("version") {
					t.Errorf("%s: secret %s without a secret and a version", in.addr, name)
				}
				f.secretEnv = append(f.secretEnv, name)
				continue
			}
			v := e.value(t, "value")
			if !v.IsWhollyKnown() {
				f.env[name], f.unknownEnv[name] = "", true
				continue
			}
			s, err := convert.Convert(v, cty.String)
			if err != nil || s.IsNull() {
				t.Fatalf("%s env %s = %#v, want a string", in.addr, name, v)
			}
			f.env[name] = s.AsString()
		}
		f.entryPoint = f.env["FUNCTION_TARGET"]
		if f.entryPoint == "" || f.unknownEnv["FUNCTION_TARGET"] {
			t.Fatalf("%s has no FUNCTION_TARGET known before apply: functions-framework-go would serve every function at its registered path", in.addr)
		}
		if other, dup := fns[f.entryPoint]; dup {
			t.Fatalf("%s and %s both serve entry point %q", other.addr, in.addr, f.entryPoint)
		}
		timeout, err := time.ParseDuration(tmpl.str(t, "timeout"))
		if err != nil {
			t.Fatalf("%s timeout: %v", tmpl.addr, err)
		}
		f.timeout = timeout
		fns[f.entryPoint] = f
	}
	return fns
}

// TestTerraformDeploysEveryFunction: every registered function is deployed
// as a Cloud Run service serving that entry point (FUNCTION_TARGET, and
// build_config's function_target for the console), under its registered
// name; all run one image, built from the archive and tagged with its hash,
// so that a code change rolls out to every service; nothing else is
// deployed.
func TestTerraformDeploysEveryFunction(t *testing.T) {
	forEachMode(t, func(t *testing.T, m *tfModule) {
		fns := deployedFunctions(t, m)
		if diff := cmp.Diff(sorted(functions.Names), sortedKeys(fns)); diff != "" {
			t.Errorf("entry points deployed vs functions.Names (-want +got):\n%s", diff)
		}
		build := imageBuild(t, m)
		image := build.str(t, "input")
		if hash := archiveHash(m.vars["source_archive"].AsString()); !strings.HasSuffix(image, ":"+hash) {
			t.Errorf("%s input = %q, want an image tagged with the archive's SHA-256 %s", build.addr, image, hash)
		}
		triggers, _ := stringList(t, build.addr+".triggers_replace", build.value(t, "triggers_replace"))
		if !slices.Contains(triggers, image) {
			t.Errorf("%s triggers_replace = %q, want it to hold the image %q, so that a new archive builds again", build.addr, triggers, image)
		}
		for _, f := range inOrder(fns) {
			if f.key != f.entryPoint {
				t.Errorf("%s serves %s (FUNCTION_TARGET), keyed %q", f.addr, f.entryPoint, f.key)
			}
			bc := f.block(t, "build_config")
			if got := bc.str(t, "function_target"); got != f.entryPoint {
				t.Errorf("%s build_config.function_target = %q, want FUNCTION_TARGET %q", f.addr, got, f.entryPoint)
			}
			if f.image != image {
				t.Errorf("%s image = %q, want the built image %q", f.addr, f.image, image)
			}
			if got := bc.str(t, "image_uri"); got != image {
				t.Errorf("%s build_config.image_uri = %q, want %q", f.addr, got, image)
			}
			if f.value(t, "deletion_protection").True() || !f.has("deletion_protection") {
				t.Errorf("%s: deletion_protection must be false, or terraform destroy fails", f.addr)
			}
		}
	})
}

// imageBuild is the terraform_data that builds the functions' image.
func imageBuild(t *testing.T, m *tfModule) tfInstance {
	t.Helper()
	builds := m.instances(t, "terraform_data")
	if len(builds) != 1 {
		t.Fatalf("%d terraform_data, want 1 (the image build)", len(builds))
	}
	return builds[0]
}

// TestTerraformImageBuild: the build submits the Cloud Build config next to
// the Terraform with exactly the substitutions it uses (Cloud Build refuses
// a build with an undefined or an unused one), builds with the functions
// buildpack for a registered entry point, and pushes the image the
// services run.
func TestTerraformImageBuild(t *testing.T) {
	m := loadModule(t, terraformDir(t), nil)
	build := imageBuild(t, m)
	exec := build.block(t, "provisioner")
	env, unknown := stringMap(t, exec.addr+".environment", exec.value(t, "environment"))
	expand := func(s string) string {
		return os.Expand(s, func(k string) string {
			if unknown[k] {
				return "stand-in"
			}
			return env[k]
		})
	}
	command := expand(exec.str(t, "command"))
	if !strings.HasPrefix(command, "gcloud builds submit ") {
		t.Fatalf("%s command = %q, want gcloud builds submit", exec.addr, command)
	}
	if !slices.Contains(functions.Names, env["TARGET"]) {
		t.Errorf("%s builds with GOOGLE_FUNCTION_TARGET %q, want a registered entry point (it selects the functions buildpack)", exec.addr, env["TARGET"])
	}
	config, err := os.ReadFile(filepath.Join(terraformDir(t), filepath.Base(env["CONFIG"])))
	if err != nil {
		t.Fatalf("%s build config: %v", exec.addr, err)
	}
	m1 := regexp.MustCompile(`--substitutions="([^"]*)"`).FindStringSubmatch(command)
	if m1 == nil {
		t.Fatalf("%s command has no --substitutions: %q", exec.addr, command)
	}
	given := map[string]string{}
	for _, kv := range strings.Split(m1[1], ",") {
		k, v, _ := strings.Cut(kv, "=")
		given[k] = v
	}
	used := map[string]string{}
	for _, u := range regexp.MustCompile(`\$\{(_[A-Z0-9_]+)\}`).FindAllStringSubmatch(string(config), -1) {
		used[u[1]] = given[u[1]]
	}
	if diff := cmp.Diff(sortedKeys(used), sortedKeys(given)); diff != "" {
		t.Errorf("substitutions: used by %s vs given by the command (-want +got):\n%s", env["CONFIG"], diff)
	}
	for _, want := range []string{"--env=GOOGLE_FUNCTION_TARGET=${_TARGET}", "--env=GOOGLE_GO_VERSION=${_GO_VERSION}", "--builder=${_BUILDER}", "- ${_IMAGE}"} {
		if !strings.Contains(string(config), want) {
			t.Errorf("%s does not hold %q", env["CONFIG"], want)
		}
	}
	if given["_IMAGE"] != build.str(t, "input") || given["_TARGET"] != env["TARGET"] {
		t.Errorf("%s pushes %q for target %q, want the image the services run, %q", exec.addr, given["_IMAGE"], given["_TARGET"], build.str(t, "input"))
	}
}

// affinityFunctions are the functions whose instances a chat's requests
// should keep reaching: they run turns or read a chat's session. Sweep is
// called by the scheduler, which keeps no cookie.
var affinityFunctions = []string{functions.NameA2A, functions.NameChat, functions.NamePending, functions.NameToolResult, functions.NameTurn}

// TestTerraformSessionAffinity: the functions that serve a chat's turns
// turn on Cloud Run's session affinity, and only those.
func TestTerraformSessionAffinity(t *testing.T) {
	forEachMode(t, func(t *testing.T, m *tfModule) {
		for _, f := range inOrder(deployedFunctions(t, m)) {
			tmpl := f.block(t, "template")
			got := tmpl.value(t, "session_affinity")
			want := slices.Contains(affinityFunctions, f.entryPoint)
			if !got.IsKnown() || got.IsNull() || got.True() != want {
				t.Errorf("%s session_affinity = %#v, want %v", f.addr, got, want)
			}
		}
	})
}

// TestTerraformCapacity: each service keeps what its function had: the
// browser-facing ones the capacity variables, Sweep one instance serving
// one request; CPU only while serving; open ingress (the functions check
// tokens) and all traffic on the latest revision.
func TestTerraformCapacity(t *testing.T) {
	forEachMode(t, func(t *testing.T, m *tfModule) {
		num := func(name string) int64 { n, _ := m.vars[name].AsBigFloat().Int64(); return n }
		for _, f := range inOrder(deployedFunctions(t, m)) {
			tmpl := f.block(t, "template")
			scaling := tmpl.block(t, "scaling")
			res := tmpl.block(t, "containers", "resources")
			limits, _ := stringMap(t, res.addr+".limits", res.value(t, "limits"))
			got := []any{tmpl.num(t, "max_instance_request_concurrency"), scaling.num(t, "min_instance_count"), scaling.num(t, "max_instance_count"), limits["cpu"], limits["memory"]}
			want := []any{num("concurrency"), num("min_instances"), num("max_instances"), m.vars["cpu"].AsString(), m.vars["memory"].AsString()}
			switch f.entryPoint {
			case functions.NameSweep:
				want = []any{int64(1), int64(0), int64(1), "1", "512Mi"}
			case functions.NameWork:
				want = []any{num("work_concurrency"), int64(0), num("work_max_instances"), m.vars["cpu"].AsString(), m.vars["memory"].AsString()}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s concurrency, min, max, cpu, memory (-want +got):\n%s", f.addr, diff)
			}
			if !res.value(t, "cpu_idle").True() {
				t.Errorf("%s cpu_idle is not true: instances would be billed between requests", res.addr)
			}
			if got := f.str(t, "ingress"); got != "INGRESS_TRAFFIC_ALL" {
				t.Errorf("%s ingress = %q, want INGRESS_TRAFFIC_ALL", f.addr, got)
			}
			traffic := f.block(t, "traffic")
			if traffic.str(t, "type") != "TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST" || traffic.num(t, "percent") != 100 {
				t.Errorf("%s: want all traffic on the latest revision", traffic.addr)
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
				// Gemini 3 text models are served from global, Live
				// models from regions only.
				if live := f.env["BATON_LIVE_LOCATION"]; live == "" || live == "global" {
					t.Errorf("%s in Vertex AI mode: BATON_LIVE_LOCATION=%q, want a region", f.addr, live)
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
// Work outlasts the queue's dispatch deadline, which holds an invocation.
// Chat holds live mode's sockets for Cloud Run's longest request, and a
// live conversation ends before its socket is cut.
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
			case functions.NameChat:
				// It holds live mode's sockets: an hour by default, and a
				// conversation ends before the socket is cut.
				live := envDuration(t, f, "BATON_LIVE_TIMEOUT")
				if f.timeout != time.Hour || live >= f.timeout || f.timeout <= request+invocation {
					t.Errorf("%s timeout = %v with BATON_LIVE_TIMEOUT = %v, want 60 min, more than the live timeout and than a turn (%v)", f.addr, f.timeout, live, request+invocation)
				}
				continue
			case functions.NameTurn, functions.NameToolResult, functions.NameSweep, functions.NameA2A:
				// Sweep's own deadline is request + invocation (it waits
				// for the invocations it resumes).
				least = request + invocation
			case functions.NameWork:
				// A delivery lasts up to the queue's dispatch deadline, which
				// holds the tool's run and the resumed agent's.
				deadline := envDuration(t, f, "BATON_WORK_DEADLINE")
				if deadline <= invocation+30*time.Second {
					t.Errorf("%s BATON_WORK_DEADLINE = %v, want more than the invocation (%v) and 30 s", f.addr, deadline, invocation)
				}
				least = deadline
			default:
				continue
			}
			if f.timeout <= least {
				t.Errorf("%s timeout = %v, want more than %v (before the stream %v, invocation %v)", f.addr, f.timeout, least, request, invocation)
			}
			if f.timeout > time.Hour {
				t.Errorf("%s timeout = %v, above Cloud Run's 60 min", f.addr, f.timeout)
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
// scheduler's service account only, Work to the queue's only, and nobody
// project-wide.
func TestTerraformInvokers(t *testing.T) {
	forEachMode(t, func(t *testing.T, m *tfModule) {
		fns := deployedFunctions(t, m)
		byService := map[string]string{}
		for ep, f := range fns {
			byService[f.name] = ep
		}
		members := map[string][]string{}
		for _, in := range m.instances(t, "google_cloud_run_v2_service_iam_member") {
			ep, ok := byService[in.str(t, "name")]
			if !ok {
				t.Errorf("%s grants on %q, not the service of a deployed function", in.addr, in.str(t, "name"))
				continue
			}
			if role := in.str(t, "role"); role != "roles/run.invoker" {
				t.Errorf("%s role = %q, want roles/run.invoker", in.addr, role)
			}
			members[ep] = append(members[ep], in.str(t, "member"))
		}
		for _, typ := range []string{"google_cloud_run_service_iam_member", "google_cloud_run_service_iam_binding", "google_cloud_run_service_iam_policy", "google_cloud_run_v2_service_iam_binding", "google_cloud_run_v2_service_iam_policy", "google_cloudfunctions2_function_iam_member", "google_cloudfunctions2_function_iam_binding"} {
			if n := len(m.instances(t, typ)); n > 0 {
				t.Errorf("%d %s: grant invoker access with google_cloud_run_v2_service_iam_member only, so this test sees every grant", n, typ)
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
			switch ep {
			case functions.NameSweep:
				want = []string{"serviceAccount:" + scheduler.block(t, "http_target", "oidc_token").str(t, "service_account_email")}
			case functions.NameWork:
				want = []string{"serviceAccount:" + fns[ep].env["BATON_WORK_INVOKER"]}
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
	return slices.Concat(ledger.Indexes, sessionstore.Indexes, a2aserver.Indexes, limits.Indexes)
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
			email := f.block(t, "template").str(t, "service_account")
			if runtime != "" && email != runtime {
				t.Errorf("%s runs as %s, others as %s", f.addr, email, runtime)
			}
			runtime = email
		}
		// The console reads and changes users (firebaseauth.admin); the
		// metrics go to Cloud Monitoring by default.
		allowed := []string{"roles/datastore.user", "roles/firebaseauth.admin"}
		if m.vars["use_vertex_ai"].True() {
			allowed = append(allowed, "roles/aiplatform.user")
		}
		if m.vars["metric_export"].AsString() == "cloudmonitoring" {
			allowed = append(allowed, "roles/monitoring.metricWriter")
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
