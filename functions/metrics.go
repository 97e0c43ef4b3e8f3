package functions

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	mexporter "github.com/GoogleCloudPlatform/opentelemetry-operations-go/exporter/metric"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Values of BATON_METRIC_EXPORT.
const (
	MetricExportNone            = "none"            // metrics stay in the instance (the console's reading)
	MetricExportCloudMonitoring = "cloudmonitoring" // and go to Cloud Monitoring in cfg.Project, every minute
)

// metricExportInterval is how often metrics go to Cloud Monitoring: its
// finest resolution for custom metrics is one point a minute per series
// (docs/operator.md).
const metricExportInterval = time.Minute

// Metrics is the process's meter provider: the functions, the team, the
// store, the limits and live mode record on OpenTelemetry's global
// provider, which InstallMetrics sets to this. It always keeps an
// in-process reading (Read: the console's overview, GET
// /admin/api/metrics), and exports to Cloud Monitoring when
// cfg.MetricExport says so.
type Metrics struct {
	provider *sdkmetric.MeterProvider
	reader   *sdkmetric.ManualReader
}

// InstallMetrics sets the process's global meter provider. Call it once
// per process, before serving (OpenTelemetry's global provider forwards
// to the first one set). shutdown flushes and stops the export.
func InstallMetrics(ctx context.Context, cfg Config) (_ *Metrics, shutdown func(context.Context) error, err error) {
	m := &Metrics{reader: sdkmetric.NewManualReader()}
	opts := []sdkmetric.Option{sdkmetric.WithReader(m.reader)}
	switch cfg.MetricExport {
	case "", MetricExportNone:
	case MetricExportCloudMonitoring:
		exp, err := mexporter.New(mexporter.WithProjectID(cfg.Project))
		if err != nil {
			return nil, nil, fmt.Errorf("cloud monitoring exporter: %w", err)
		}
		opts = append(opts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(metricExportInterval))))
	default:
		return nil, nil, fmt.Errorf("BATON_METRIC_EXPORT=%q: want %s or %s", cfg.MetricExport, MetricExportNone, MetricExportCloudMonitoring)
	}
	m.provider = sdkmetric.NewMeterProvider(opts...)
	otel.SetMeterProvider(m.provider)
	return m, m.provider.Shutdown, nil
}

// MetricPoint is one series of a metric as the console reads it: its
// attributes, and its value (a sum, a gauge's last value, or a
// histogram's count, sum and bucket counts).
type MetricPoint struct {
	Attributes map[string]string `json:"attributes"`
	Value      float64           `json:"value"`
	Count      uint64            `json:"count,omitempty"`
	Bounds     []float64         `json:"bounds,omitempty"`
	Buckets    []uint64          `json:"buckets,omitempty"`
}

// MetricView is one metric of a reading.
type MetricView struct {
	Name        string        `json:"name"`
	Unit        string        `json:"unit"`
	Description string        `json:"description"`
	Kind        string        `json:"kind"` // sum, gauge or histogram
	Points      []MetricPoint `json:"points"`
}

// Read collects what this process has recorded since it started.
func (m *Metrics) Read(ctx context.Context) ([]MetricView, error) {
	var rm metricdata.ResourceMetrics
	if err := m.reader.Collect(ctx, &rm); err != nil {
		return nil, fmt.Errorf("collect metrics: %w", err)
	}
	var out []MetricView
	for _, sm := range rm.ScopeMetrics {
		for _, md := range sm.Metrics {
			out = append(out, metricView(md))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func metricView(md metricdata.Metrics) MetricView {
	v := MetricView{Name: md.Name, Unit: md.Unit, Description: md.Description, Points: []MetricPoint{}}
	attrs := func(s attribute.Set) map[string]string {
		out := map[string]string{}
		for _, kv := range s.ToSlice() {
			out[string(kv.Key)] = kv.Value.Emit()
		}
		return out
	}
	switch d := md.Data.(type) {
	case metricdata.Sum[int64]:
		v.Kind = "sum"
		for _, p := range d.DataPoints {
			v.Points = append(v.Points, MetricPoint{Attributes: attrs(p.Attributes), Value: float64(p.Value)})
		}
	case metricdata.Gauge[int64]:
		v.Kind = "gauge"
		for _, p := range d.DataPoints {
			v.Points = append(v.Points, MetricPoint{Attributes: attrs(p.Attributes), Value: float64(p.Value)})
		}
	case metricdata.Histogram[int64]:
		v.Kind = "histogram"
		for _, p := range d.DataPoints {
			v.Points = append(v.Points, MetricPoint{Attributes: attrs(p.Attributes), Value: float64(p.Sum), Count: p.Count, Bounds: p.Bounds, Buckets: p.BucketCounts})
		}
	case metricdata.Histogram[float64]:
		v.Kind = "histogram"
		for _, p := range d.DataPoints {
			v.Points = append(v.Points, MetricPoint{Attributes: attrs(p.Attributes), Value: p.Sum, Count: p.Count, Bounds: p.Bounds, Buckets: p.BucketCounts})
		}
	}
	return v
}

// requestMeters are the functions' request metrics: the semantic
// conventions' http.server.request.duration (with the function's name,
// baton.function, and the status code), and baton.requests, a count by
// function and status class ("2xx" ... "5xx"), whose 5xx the alert's
// ratio reads (a count aligns as a rate; a histogram's count does not in
// a threshold condition).
type requestMeters struct {
	duration metric.Float64Histogram
	count    metric.Int64Counter
}

var requestMetrics = sync.OnceValue(func() requestMeters {
	m := otel.Meter("github.com/baton-run/baton/functions")
	var r requestMeters
	r.duration, _ = m.Float64Histogram("http.server.request.duration",
		metric.WithUnit("s"), metric.WithDescription("Requests served, by function, method and status code"))
	r.count, _ = m.Int64Counter("baton.requests", metric.WithUnit("{request}"),
		metric.WithDescription("Requests served, by function and status class"))
	return r
})

// countRequest records a request of function name that ended with status
// after d.
func countRequest(ctx context.Context, name, method string, status int, d time.Duration) {
	fn := attribute.String("baton.function", name)
	requestMetrics().duration.Record(ctx, d.Seconds(), metric.WithAttributes(fn,
		attribute.String("http.request.method", method), attribute.String("http.response.status_code", strconv.Itoa(status))))
	requestMetrics().count.Add(ctx, 1, metric.WithAttributes(fn, attribute.String("baton.status_class", strconv.Itoa(status/100)+"xx")))
}
