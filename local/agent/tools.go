package agent

import (
	"fmt"
	"hash/fnv"
	"strings"
	"time"
	_ "time/tzdata" // get_current_time must know time zones on minimal images

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/baton-run/baton/toolcallback"
)

// WeatherArgs are get_weather's arguments.
type WeatherArgs struct {
	City string `json:"city" jsonschema:"the city to report on"`
}

// CalculateArgs are calculate's arguments.
type CalculateArgs struct {
	Expression string `json:"expression" jsonschema:"arithmetic with + - * / and parentheses, e.g. 12*7"`
}

// TimeArgs are get_current_time's arguments.
type TimeArgs struct {
	Timezone string `json:"timezone,omitempty" jsonschema:"an IANA time zone such as Asia/Tokyo; UTC when empty"`
}

// BGMArgs are change_bgm's arguments.
type BGMArgs struct {
	Track int `json:"track" jsonschema:"the track to play, 1 to 3"`
}

// LocationArgs are get_location's (no) arguments.
type LocationArgs struct{}

// TableArgs are book_table's arguments.
type TableArgs struct {
	People int    `json:"people" jsonschema:"how many people"`
	Time   string `json:"time" jsonschema:"when, e.g. 19:00"`
	Name   string `json:"name" jsonschema:"the name for the booking"`
}

// Tools returns the demo's tools.
func Tools() ([]tool.Tool, error) {
	weather, err := functiontool.New(functiontool.Config{Name: "get_weather", Description: "Current weather for a city."}, getWeather)
	if err != nil {
		return nil, err
	}
	calc, err := functiontool.New(functiontool.Config{Name: "calculate", Description: "Evaluate an arithmetic expression."}, calculate)
	if err != nil {
		return nil, err
	}
	clock, err := functiontool.New(functiontool.Config{Name: "get_current_time", Description: "The current time in a time zone."}, currentTime)
	if err != nil {
		return nil, err
	}
	bgm, err := toolcallback.Browser[BGMArgs](toolcallback.BrowserConfig{
		Name:        "change_bgm",
		Description: "Switch the background music playing in the user's page to another track (1 to 3).",
		Timeout:     2 * time.Minute,
	})
	if err != nil {
		return nil, err
	}
	location, err := toolcallback.Browser[LocationArgs](toolcallback.BrowserConfig{
		Name:        "get_location",
		Description: "The user's location from the browser's geolocation, if they allow it.",
		Timeout:     5 * time.Minute,
	})
	if err != nil {
		return nil, err
	}
	book, err := toolcallback.Approval(toolcallback.ApprovalConfig[TableArgs]{
		Name:        "book_table",
		Description: "Book a restaurant table. A person approves each booking and may edit it.",
	}, bookTable)
	if err != nil {
		return nil, err
	}
	surface, err := toolcallback.Surface(toolcallback.SurfaceConfig{})
	if err != nil {
		return nil, err
	}
	return []tool.Tool{weather, calc, clock, bgm, location, book, surface}, nil
}

// getWeather makes up plausible weather: the demo has no network. The same
// city always gets the same report.
func getWeather(_ agent.Context, a WeatherArgs) (map[string]any, error) {
	city := strings.TrimSpace(a.City)
	if city == "" {
		return nil, fmt.Errorf("which city? the city argument is empty")
	}
	h := fnv.New32a()
	h.Write([]byte(strings.ToLower(city)))
	n := h.Sum32()
	conditions := []string{"sunny", "partly cloudy", "cloudy", "light rain", "windy"}
	return map[string]any{
		"city":        city,
		"conditions":  conditions[n%uint32(len(conditions))],
		"temperature": int(n%25) + 5,
		"unit":        "celsius",
	}, nil
}

func calculate(_ agent.Context, a CalculateArgs) (map[string]any, error) {
	v, err := evaluate(a.Expression)
	if err != nil {
		return nil, err
	}
	return map[string]any{"expression": a.Expression, "result": v}, nil
}

func currentTime(ctx agent.Context, a TimeArgs) (map[string]any, error) {
	name := a.Timezone
	if name == "" {
		name = "UTC"
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q", name)
	}
	now := platform.Now(ctx).In(loc)
	return map[string]any{"timezone": name, "time": now.Format("15:04"), "date": now.Format("Monday 2 January 2006")}, nil
}

func bookTable(_ agent.Context, a TableArgs) (map[string]any, error) {
	if a.People < 1 || a.People > 20 {
		return nil, fmt.Errorf("a table is for 1 to 20 people, not %d", a.People)
	}
	return map[string]any{"booked": true, "people": a.People, "time": a.Time, "name": a.Name}, nil
}
