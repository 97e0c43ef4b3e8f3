package infra

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// alertPolicies are the alerts docs/operator.md explains, by resource
// name.
var alertPolicies = []string{"budget_exhaustion", "errors_5xx", "no_sweep", "overdue_calls"}

// TestTerraformMonitoring: with metrics exported to Cloud Monitoring, the
// dashboard has a chart per metric and is valid JSON, each alert policy
// exists with a condition and notifies var.notification_channels; with
// metrics off, none is deployed.
func TestTerraformMonitoring(t *testing.T) {
	channels := cty.ListVal([]cty.Value{cty.StringVal("projects/p/notificationChannels/42")})
	m := loadModule(t, terraformDir(t), map[string]cty.Value{"notification_channels": channels})
	var names []string
	for _, in := range m.instances(t, "google_monitoring_alert_policy") {
		name := strings.TrimSuffix(strings.TrimPrefix(in.addr, "google_monitoring_alert_policy."), "[0]")
		names = append(names, name)
		got, _ := stringList(t, in.addr+".notification_channels", in.value(t, "notification_channels"))
		if !slices.Equal(got, []string{"projects/p/notificationChannels/42"}) {
			t.Errorf("%s notification_channels = %v, want var.notification_channels", in.addr, got)
		}
		if len(in.blocks(t, "conditions")) == 0 || len(in.blocks(t, "documentation")) == 0 {
			t.Errorf("%s: want a condition and documentation saying what to do", in.addr)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, alertPolicies) {
		t.Errorf("alert policies = %v, want %v", names, alertPolicies)
	}
	dashboards := m.instances(t, "google_monitoring_dashboard")
	if len(dashboards) != 1 {
		t.Fatalf("%d dashboards, want 1", len(dashboards))
	}
	var d struct {
		MosaicLayout struct {
			Tiles []struct {
				Widget struct{ Title string }
			}
		}
	}
	if err := json.Unmarshal([]byte(dashboards[0].str(t, "dashboard_json")), &d); err != nil {
		t.Fatalf("dashboard_json: %v", err)
	}
	if len(d.MosaicLayout.Tiles) < len(recordedMetrics(t)) {
		t.Errorf("the dashboard has %d charts for %d metrics", len(d.MosaicLayout.Tiles), len(recordedMetrics(t)))
	}

	off := loadModule(t, terraformDir(t), map[string]cty.Value{"metric_export": cty.StringVal("none")})
	if n := len(off.instances(t, "google_monitoring_alert_policy")) + len(off.instances(t, "google_monitoring_dashboard")); n != 0 {
		t.Errorf("metric_export = none deploys %d alert policies and dashboards, want 0", n)
	}
}

// TestMonitoredMetricsAreRecorded: every metric monitoring.tf names is
// one the code records (its name as a string in a Go source file, not a
// test), and every metric the code records is charted and documented in
// docs/operator.md.
func TestMonitoredMetricsAreRecorded(t *testing.T) {
	tf, err := os.ReadFile(filepath.Join(terraformDir(t), "monitoring.tf"))
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+"([a-z_.]+)",$`).FindAllStringSubmatch(string(tf), -1) {
		named[m[1]] = true
	}
	recorded := recordedMetrics(t)
	docs, err := os.ReadFile(filepath.Join("..", "docs", "operator.md"))
	if err != nil {
		t.Fatal(err)
	}
	for name := range named {
		if !recorded[name] {
			t.Errorf("monitoring.tf names %s, which no Go source records", name)
		}
	}
	for name := range recorded {
		if !named[name] {
			t.Errorf("the code records %s, which monitoring.tf does not chart", name)
		}
		if !strings.Contains(string(docs), "`"+name+"`") {
			t.Errorf("docs/operator.md does not document %s", name)
		}
	}
}

// recordedMetrics are the instruments the code creates: the names given
// to an otel meter's Int64Counter, Int64Gauge, Int64Histogram or
// Float64Histogram in the module's Go sources.
func recordedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	re := regexp.MustCompile(`\.(?:Int64Counter|Int64Gauge|Int64Histogram|Float64Histogram)\("([a-z_.]+)"`)
	out := map[string]bool{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			out[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("found no instruments in the Go sources")
	}
	return out
}
