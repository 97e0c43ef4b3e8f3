package localtasks

import (
	"strings"
	"testing"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/api/idtoken"
)

// TestOIDCToken: a task that asks for an OIDC token reaches its worker
// with a bearer token for its service account and audience (the URL when
// it names none), which idtoken's validator, the check a worker runs in
// production, accepts given the issuer's key client, and which fails for
// another audience. A task's own Authorization header is replaced.
func TestOIDCToken(t *testing.T) {
	t.Parallel()
	iss, err := NewIssuer()
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, &Options{Signer: iss.Sign}, nil, nil)
	const account = "tasks@test-project.iam.gserviceaccount.com"
	withToken := func(audience string) func(*cloudtaskspb.Task) {
		return func(task *cloudtaskspb.Task) {
			r := task.GetHttpRequest()
			r.Headers["Authorization"] = "Bearer forged"
			r.AuthorizationHeader = &cloudtaskspb.HttpRequest_OidcToken{OidcToken: &cloudtaskspb.OidcToken{ServiceAccountEmail: account, Audience: audience}}
		}
	}
	f.wait(t, f.create(t, "named", withToken("https://worker.example")), Completed)
	f.wait(t, f.create(t, "url", withToken("")), Completed)

	v, err := idtoken.NewValidator(t.Context(), idtoken.WithHTTPClient(iss.KeyClient()))
	if err != nil {
		t.Fatal(err)
	}
	for id, audience := range map[string]string{"named": "https://worker.example", "url": f.worker.srv.URL + "/work"} {
		got := f.worker.deliveries(id)
		if len(got) != 1 {
			t.Fatalf("%s: deliveries = %d, want 1", id, len(got))
		}
		raw, ok := strings.CutPrefix(got[0].header.Get("Authorization"), "Bearer ")
		if !ok || raw == "forged" {
			t.Fatalf("%s: Authorization = %q, want the minted bearer token", id, got[0].header.Get("Authorization"))
		}
		payload, err := v.Validate(t.Context(), raw, audience)
		if err != nil {
			t.Fatalf("%s: Validate(token, %q) error = %v", id, audience, err)
		}
		if payload.Claims["email"] != account || payload.Claims["email_verified"] != true || payload.Issuer != "https://accounts.google.com" {
			t.Errorf("%s: claims = %v, want the service account's, verified, from accounts.google.com", id, payload.Claims)
		}
		if _, err := v.Validate(t.Context(), raw, "https://other.example"); err == nil {
			t.Errorf("%s: Validate for another audience succeeded", id)
		}
	}
	if _, err := iss.KeyClient().Get("https://example.com/"); err == nil {
		t.Error("the key client fetched another URL, want it refused")
	}
}
