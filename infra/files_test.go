package infra

import (
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// TestTerraformFilesBucket: chats' files live in a bucket of their own,
// never public, that the functions' account may use and whose lifecycle
// deletes, a day after a chat's idle retention, what Sweep left behind.
func TestTerraformFilesBucket(t *testing.T) {
	for _, tt := range []struct {
		retention string
		wantDays  int64
	}{{"720h", 31}, {"36h", 3}, {"90m", 2}} {
		m := loadModule(t, terraformDir(t), map[string]cty.Value{"idle_retention": cty.StringVal(tt.retention)})
		var files *tfInstance
		for _, b := range m.instances(t, "google_storage_bucket") {
			if b.addr == "google_storage_bucket.files" {
				files = &b
			}
		}
		if files == nil {
			t.Fatal("no google_storage_bucket.files")
		}
		if got := files.str(t, "public_access_prevention"); got != "enforced" {
			t.Errorf("public_access_prevention = %q, want enforced", got)
		}
		if !files.value(t, "uniform_bucket_level_access").True() {
			t.Error("uniform_bucket_level_access is off")
		}
		rules := files.blocks(t, "lifecycle_rule")
		if len(rules) != 1 {
			t.Fatalf("%d lifecycle rules, want 1", len(rules))
		}
		if got := rules[0].block(t, "condition").num(t, "age"); got != tt.wantDays {
			t.Errorf("idle_retention %s: files deleted after %d days, want %d", tt.retention, got, tt.wantDays)
		}
		granted := false
		for _, in := range m.instances(t, "google_storage_bucket_iam_member") {
			if in.str(t, "role") == "roles/storage.objectAdmin" && in.str(t, "member") == m.serviceAccounts(t).GetAttr("runtime").GetAttr("member").AsString() {
				granted = true
			}
		}
		if !granted {
			t.Error("the runtime account has no access to the files bucket")
		}
	}
}
