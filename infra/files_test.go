package infra

import (
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// TestTerraformFilesBucket: chats' files live in a bucket of their own,
// never public, that the functions' account may use, and that deletes no
// object by age: a chat still in use keeps its oldest files (Sweep deletes
// a chat's files with the chat). A deleted file is not kept soft-deleted.
func TestTerraformFilesBucket(t *testing.T) {
	for _, retention := range []string{"720h", "36h"} {
		m := loadModule(t, terraformDir(t), map[string]cty.Value{"idle_retention": cty.StringVal(retention)})
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
		if rules := files.blocks(t, "lifecycle_rule"); len(rules) != 0 {
			t.Errorf("idle_retention %s: %d lifecycle rules on the files bucket, want none", retention, len(rules))
		}
		if soft := files.blocks(t, "soft_delete_policy"); len(soft) != 1 || soft[0].value(t, "retention_duration_seconds").AsBigFloat().Sign() != 0 {
			t.Errorf("idle_retention %s: the files bucket keeps deleted files (soft_delete_policy %v)", retention, soft)
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
