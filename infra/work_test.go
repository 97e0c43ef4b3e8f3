package infra

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/functions"
)

// TestTerraformWorkQueue: the background calls' queue is the one the
// functions name (BATON_WORK_QUEUE), retries with backoff within a bound
// a tool's default attempts fit in, and limits its dispatches; it
// delivers to Work's deterministic URL with tokens of its own account
// (BATON_WORK_URL, _AUDIENCE, _INVOKER); the functions may create and
// delete tasks on it, and act as that account, and nothing more.
func TestTerraformWorkQueue(t *testing.T) {
	forEachMode(t, func(t *testing.T, m *tfModule) {
		queues := m.instances(t, "google_cloud_tasks_queue")
		if len(queues) != 1 {
			t.Fatalf("%d google_cloud_tasks_queue, want 1", len(queues))
		}
		q := queues[0]
		fns := deployedFunctions(t, m)
		work, ok := fns[functions.NameWork]
		if !ok {
			t.Fatal("Work is not deployed")
		}
		name := fmt.Sprintf("projects/%s/locations/%s/queues/%s", q.str(t, "project"), q.str(t, "location"), q.str(t, "name"))
		url := fmt.Sprintf("https://%s-%s.%s.run.app", work.name, testProjectNumber, work.str(t, "location"))
		tasks := ""
		for _, sa := range m.instances(t, "google_service_account") {
			if strings.HasSuffix(sa.str(t, "account_id"), "-tasks") {
				tasks = sa.str(t, "account_id") + "@" + testProject + ".iam.gserviceaccount.com"
			}
		}
		for _, f := range inOrder(fns) {
			want := map[string]string{"BATON_WORK_QUEUE": name, "BATON_WORK_URL": url, "BATON_WORK_AUDIENCE": url, "BATON_WORK_INVOKER": tasks}
			for k, v := range want {
				if f.env[k] != v || f.unknownEnv[k] {
					t.Errorf("%s %s = %q, want %q", f.addr, k, f.env[k], v)
				}
			}
		}
		retry := q.block(t, "retry_config")
		if n := retry.num(t, "max_attempts"); n < 3 {
			t.Errorf("%s max_attempts = %d, want at least 3 (a tool's default attempts)", retry.addr, n)
		}
		minB, err1 := time.ParseDuration(retry.str(t, "min_backoff"))
		maxB, err2 := time.ParseDuration(retry.str(t, "max_backoff"))
		if err1 != nil || err2 != nil || minB <= 0 || maxB < minB {
			t.Errorf("%s backoff %q to %q, want a positive range", retry.addr, retry.str(t, "min_backoff"), retry.str(t, "max_backoff"))
		}
		rate := q.block(t, "rate_limits")
		if rate.num(t, "max_concurrent_dispatches") <= 0 {
			t.Errorf("%s: want a bound on the deliveries in flight", rate.addr)
		}

		grants := map[string][]string{}
		for _, g := range m.instances(t, "google_cloud_tasks_queue_iam_member") {
			if g.str(t, "name") != q.str(t, "name") {
				t.Errorf("%s grants on %q, not the work queue", g.addr, g.str(t, "name"))
			}
			grants[g.str(t, "member")] = append(grants[g.str(t, "member")], g.str(t, "role"))
		}
		runtime := "serviceAccount:" + work.block(t, "template").str(t, "service_account")
		if got := grants[runtime]; !slices.Contains(got, "roles/cloudtasks.enqueuer") || !slices.Contains(got, "roles/cloudtasks.taskDeleter") || len(grants) != 1 {
			t.Errorf("queue grants %v, want the runtime %s to enqueue and delete tasks, and nobody else", grants, runtime)
		}
		actAs := m.instances(t, "google_service_account_iam_member")
		if len(actAs) != 1 || actAs[0].str(t, "role") != "roles/iam.serviceAccountUser" || actAs[0].str(t, "member") != runtime ||
			!strings.HasSuffix(actAs[0].str(t, "service_account_id"), "/"+tasks) {
			t.Errorf("service account grants: want the runtime to act as %s (its tasks' tokens), only", tasks)
		}
		for _, typ := range []string{"google_project_iam_member", "google_project_iam_binding"} {
			for _, in := range m.instances(t, typ) {
				if role := in.str(t, "role"); strings.HasPrefix(role, "roles/cloudtasks.") || role == "roles/iam.serviceAccountUser" || role == "roles/iam.serviceAccountTokenCreator" {
					t.Errorf("%s grants %s project-wide", in.addr, role)
				}
			}
		}
	})
}
