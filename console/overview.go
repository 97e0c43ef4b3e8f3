package console

import (
	"context"
	"time"

	"google.golang.org/adk/v2/platform"

	"github.com/baton-run/baton/limits"
)

// Overview is the deployment at a glance: the caps against what the day
// used, and what the console's lists mean.
type Overview struct {
	App        string            `json:"app"`
	Agents     []string          `json:"agents"`
	Day        string            `json:"day"` // the UTC day of the counts
	Service    limits.ServiceDay `json:"service"`
	TokensCap  int64             `json:"tokensCap"`       // 0: no cap
	NewAnonCap int64             `json:"newAnonymousCap"` // 0: no cap
	StuckAfter string            `json:"stuckAfter"`
	States     []State           `json:"states"`
}

// Overview reads the day's counts of the deployment's caps (two
// aggregation queries).
func (c *Console) Overview(ctx context.Context) (*Overview, error) {
	now := platform.Now(ctx)
	usage, err := c.counter.ServiceUsage(ctx, now)
	if err != nil {
		return nil, err
	}
	return &Overview{App: c.team.App(), Agents: c.team.Agents(), Day: now.UTC().Format(time.DateOnly), Service: usage,
		TokensCap: c.opts.Service.ServiceTokensPerDay, NewAnonCap: c.opts.Service.NewAnonymousPerDay,
		StuckAfter: c.opts.StuckAfter.String(), States: States}, nil
}
