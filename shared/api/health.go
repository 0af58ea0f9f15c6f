package api

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/httpapi"
)

// Check probes one dependency.
type Check struct {
	Name string
	Ping func(ctx context.Context) error
}

// DependencyStatus is one line of the health report. Errors are not echoed
// to clients (they may name internal resources); they are logged.
type DependencyStatus struct {
	Name      string `json:"name"`
	Status    string `json:"status"`
	LatencyMS int64  `json:"latency_ms"`
}

// HealthReport is the body of GET /v1/health.
type HealthReport struct {
	Status       string             `json:"status"`
	Stage        string             `json:"stage"`
	Dependencies []DependencyStatus `json:"dependencies"`
}

// HealthRoutes registers GET /v1/health: 200 when every dependency answers,
// 503 otherwise. Checks run in parallel, each bounded to 3 seconds.
func HealthRoutes(rt *httpapi.Router, stage string, checks []Check) {
	rt.Handle("GET /v1/health", func(ctx context.Context, r *httpapi.Request) (httpapi.Response, error) {
		rep := HealthReport{Status: "ok", Stage: stage, Dependencies: make([]DependencyStatus, len(checks))}
		var wg sync.WaitGroup
		for i, c := range checks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
				defer cancel()
				start := time.Now()
				err := c.Ping(cctx)
				st := DependencyStatus{Name: c.Name, Status: "ok", LatencyMS: time.Since(start).Milliseconds()}
				if err != nil {
					st.Status = "unavailable"
					r.Log.WarnContext(ctx, "dependency unavailable", "dependency", c.Name, "error", err.Error())
				}
				rep.Dependencies[i] = st
			}()
		}
		wg.Wait()
		status := http.StatusOK
		for _, d := range rep.Dependencies {
			if d.Status != "ok" {
				rep.Status, status = "degraded", http.StatusServiceUnavailable
			}
		}
		return httpapi.Response{Status: status, Body: rep}, nil
	})
}
