package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/conclave-ai/conclave/shared/platform/backoff"
	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/team/admin"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// apiK is the examples per skill of the team the API mode builds: the
// figure issue 42 counts.
const apiK = 25

// apiOptions are the API mode's flags.
type apiOptions struct {
	seed    uint64
	stride  int           // every stride-th message of each test split
	workers int           // turns in flight at once
	rate    float64       // requests per second at most, all workers together
	fitWait time.Duration // how long the classifier may take to be fitted
	verbose bool
}

// runAPI measures the same team through the HTTP API of a running stage
// (CONCLAVE_BASE_URL, CONCLAVE_EDGE_URL, CONCLAVE_STAGE: a local cloud's
// cloud.env): a fresh team from the admin function, its agents written
// with POST /v1/agents, the generalist its default agent, the
// classifier-fitter's fit awaited, then each sampled test message the
// first turn of a new conversation, the routing read from the turn.
func runAPI(ctx context.Context, w io.Writer, set *dataset, o apiOptions) error {
	base, edge, stage := os.Getenv("CONCLAVE_BASE_URL"), os.Getenv("CONCLAVE_EDGE_URL"), os.Getenv("CONCLAVE_STAGE")
	if base == "" || edge == "" || stage == "" {
		return errors.New("-api needs CONCLAVE_BASE_URL, CONCLAVE_EDGE_URL and CONCLAVE_STAGE (a local cloud's cloud.env)")
	}
	if o.stride < 1 || o.workers < 1 || o.rate <= 0 {
		return errors.New("-stride and -workers must be at least 1, -rate above 0")
	}
	start := time.Now()
	key, err := createTeam(ctx, edge, stage)
	if err != nil {
		return err
	}
	c := newClient(base, key, o.rate)
	defer c.stop()

	team, cut := withinLimits(set.team(apiK, o.seed))
	skills, err := writeTeam(ctx, c, team)
	if err != nil {
		return err
	}
	written := time.Now()
	rep, err := awaitClassifier(ctx, c, skills, o.fitWait)
	if err != nil {
		return err
	}
	fitted := time.Since(written)

	in, out := sample(set.Test, o.stride), sample(set.OOSTest, o.stride)
	routeStart := time.Now()
	inR, inMS, err := routeAPI(ctx, c, in, o.workers)
	if err != nil {
		return err
	}
	outR, outMS, err := routeAPI(ctx, c, out, o.workers)
	if err != nil {
		return err
	}
	routed := time.Since(routeStart)
	n := len(in) + len(out)
	m := measure(inR, outR)

	fmt.Fprintf(w, "CLINC150 through the HTTP API of stage %q (%s): a fresh team, %d agents with %d skills and %d examples per skill written with POST /v1/agents, %q the default agent; embedder %s\n",
		stage, base, len(team), skills, apiK, generalist, rep.Embedder)
	if len(cut) == 0 {
		fmt.Fprintf(w, "within the API's limits (%d skills per agent, %d examples per skill, %d bytes of examples per agent): nothing cut\n",
			agents.MaxSkills, agents.MaxExamples, agents.MaxExampleBytes)
	}
	for _, s := range cut {
		fmt.Fprintln(w, "cut to the API's limits:", s)
	}
	fmt.Fprintf(w, "classifier %s %.0f s after the last agent was written (%d skills", rep.Classifier.Status, fitted.Seconds(), rep.Classifier.Skills)
	if cv := rep.Classifier.CrossValidation; cv != nil {
		fmt.Fprintf(w, "; cross-validated on the team's examples: agent top-1 %.1f%%, skill top-1 %.1f%%", 100*cv.AgentTop1, 100*cv.SkillTop1)
	}
	fmt.Fprintln(w, ")")
	fmt.Fprintf(w, "1 test message in %d, from the first: %d in scope of %d, %d out of scope of %d; each the first turn of a new conversation (POST /v1/conversations, then its message), %d at a time, at most %g requests/s\n\n",
		o.stride, len(in), len(set.Test), len(out), len(set.OOSTest), o.workers, o.rate)
	fmt.Fprintln(w, "| team | examples per skill | right agent | right skill | in scope declined | out of scope declined | ms per turn |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	fmt.Fprintf(w, "| CLINC150 | %d, classifier, through the API (%d messages) | %.1f%% | %.1f%% | %.1f%% | %.1f%% | %.0f |\n",
		apiK, n, m.agent, m.skill, m.falseDeclined, m.declined, (inMS+outMS)/float64(n))
	fmt.Fprintln(w)
	fmt.Fprintf(w, "ms per turn: the mean time of POST /v1/conversations/{id}/messages as the client saw it (the gate, the local model's reply, the stored turn), %d at a time. Routing took %.0f s, the whole run %.0f s.\n",
		o.workers, routed.Seconds(), time.Since(start).Seconds())
	if o.verbose {
		printMisses(w, inR)
	}
	return nil
}

// writeTeam writes the agents with POST /v1/agents and makes the
// generalist the default agent; it returns how many skills they have.
func writeTeam(ctx context.Context, c *client, team []agents.Agent) (int, error) {
	skills := 0
	for _, a := range team {
		skills += len(a.Skills)
		// The fields of agents.CreateInput the bench sets: its nil
		// pointers would be sent as nulls, which the API refuses.
		in := struct {
			Slug   string         `json:"slug"`
			Name   string         `json:"name"`
			Skills []agents.Skill `json:"skills"`
		}{a.Slug, a.Name, a.Skills}
		if _, err := c.call(ctx, http.MethodPost, "/v1/agents", in, http.StatusCreated); err != nil {
			return 0, fmt.Errorf("agent %s: %w", a.Slug, err)
		}
	}
	if _, err := c.call(ctx, http.MethodPut, "/v1/team/default-agent", map[string]string{"slug": generalist}, http.StatusOK); err != nil {
		return 0, fmt.Errorf("default agent: %w", err)
	}
	return skills, nil
}

// sample is every stride-th message, from the first: deterministic, and
// spread over the split's intents (the splits are grouped by intent).
func sample(msgs []labelled, stride int) []labelled {
	out := make([]labelled, 0, (len(msgs)+stride-1)/stride)
	for i := 0; i < len(msgs); i += stride {
		out = append(out, msgs[i])
	}
	return out
}

// withinLimits is team as POST /v1/agents accepts it: at most
// agents.MaxSkills skills per agent, agents.MaxExamples examples per skill
// and agents.MaxExampleBytes bytes of examples per agent (the last
// examples of the last skills go first). cut says what was dropped, one
// line per agent; none for CLINC150's team of 15 skills of 25 examples.
func withinLimits(team []agents.Agent) (out []agents.Agent, cut []string) {
	out = make([]agents.Agent, len(team))
	for i, a := range team {
		skills, dropped := a.Skills, 0
		if len(skills) > agents.MaxSkills {
			cut = append(cut, fmt.Sprintf("%s: %d skills, the first %d kept", a.Slug, len(skills), agents.MaxSkills))
			skills = skills[:agents.MaxSkills]
		}
		skills = append([]agents.Skill(nil), skills...)
		size, full := 0, false
		for j := range skills {
			ex := skills[j].Examples
			if len(ex) > agents.MaxExamples {
				dropped += len(ex) - agents.MaxExamples
				ex = ex[:agents.MaxExamples]
			}
			kept := 0
			for _, e := range ex {
				if full = full || size+len(e) > agents.MaxExampleBytes; full {
					break
				}
				size += len(e)
				kept++
			}
			dropped += len(ex) - kept
			skills[j].Examples = ex[:kept]
		}
		if dropped > 0 {
			cut = append(cut, fmt.Sprintf("%s: %d examples dropped", a.Slug, dropped))
		}
		a.Skills = skills
		out[i] = a
	}
	return out, cut
}

// createTeam creates a team through the stage's admin function (the Lambda
// Invoke API on the edge, as infra/admin does) and returns its first key.
func createTeam(ctx context.Context, edge, stage string) (string, error) {
	if os.Getenv("AWS_ACCESS_KEY_ID") == "" {
		os.Setenv("AWS_ACCESS_KEY_ID", "test")
		os.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	}
	opts := []func(*config.LoadOptions) error{config.WithBaseEndpoint(edge)}
	if os.Getenv("AWS_REGION") == "" {
		opts = append(opts, config.WithRegion("us-east-1"))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(admin.Request{Action: admin.ActionCreateTeam, Name: "clincbench " + time.Now().UTC().Format(time.RFC3339)})
	if err != nil {
		return "", err
	}
	res, err := lambda.NewFromConfig(cfg).Invoke(ctx, &lambda.InvokeInput{
		FunctionName: aws.String(manifest.Names{Stage: stage}.Function("admin")),
		Payload:      payload,
	})
	if err != nil {
		return "", fmt.Errorf("create-team: %w", err)
	}
	if res.FunctionError != nil {
		return "", fmt.Errorf("create-team: the admin function failed: %s", res.Payload)
	}
	var resp admin.Response
	if err := json.Unmarshal(res.Payload, &resp); err != nil {
		return "", fmt.Errorf("create-team: %w", err)
	}
	if resp.Error != nil {
		return "", fmt.Errorf("create-team: %s: %s", resp.Error.Code, resp.Error.Message)
	}
	if resp.Key == nil {
		return "", errors.New("create-team: no key in the answer")
	}
	return resp.Key.Secret, nil
}

// awaitClassifier polls GET /v1/routing/calibration until the team's
// classifier is current (fitted by the classifier-fitter to the agents as
// they read now) and covers the team's skills, for at most d.
func awaitClassifier(ctx context.Context, c *client, skills int, d time.Duration) (expertgate.CalibrationReport, error) {
	rep, err := backoff.Poll(ctx, d, func(ctx context.Context) (expertgate.CalibrationReport, bool, error) {
		var rep expertgate.CalibrationReport
		body, err := c.call(ctx, http.MethodGet, "/v1/routing/calibration", nil, http.StatusOK)
		if err != nil {
			return rep, false, err
		}
		if err := json.Unmarshal(body, &rep); err != nil {
			return rep, false, err
		}
		return rep, rep.Classifier.Status == "current" && rep.Classifier.Skills == skills, nil
	})
	if err != nil {
		return rep, err
	}
	if rep.Classifier.Status != "current" || rep.Classifier.Skills != skills {
		return rep, fmt.Errorf("the classifier is %s with %d skills after %s (want current with %d): is the classifier-fitter running?",
			rep.Classifier.Status, rep.Classifier.Skills, d, skills)
	}
	// A gate index built before the fit landed would look again only
	// after expertgate.ClassifierRecheck; no turn has been routed yet, so
	// the first index is built now and reads the stored fit.
	return rep, nil
}

// routeAPI routes each message as a new conversation's first turn, workers
// at a time, and returns the outcomes in the messages' order and the
// summed time of the turns (ms).
func routeAPI(ctx context.Context, c *client, msgs []labelled, workers int) ([]routed, float64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make([]routed, len(msgs))
	ms := make([]float64, len(msgs))
	next := make(chan int)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r, took, err := turn(ctx, c, msgs[i])
				if err != nil {
					once.Do(func() { first = err; cancel() })
					continue
				}
				out[i], ms[i] = r, took
			}
		}()
	}
feed:
	for i := range msgs {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if first != nil {
		return nil, 0, first
	}
	total := 0.0
	for _, t := range ms {
		total += t
	}
	return out, total, nil
}

// turn opens a conversation and posts m as its first message.
func turn(ctx context.Context, c *client, m labelled) (routed, float64, error) {
	body, err := c.call(ctx, http.MethodPost, "/v1/conversations", map[string]string{"title": "clincbench"}, http.StatusCreated)
	if err != nil {
		return routed{}, 0, fmt.Errorf("conversation: %w", err)
	}
	var conv struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(body, &conv); err != nil || conv.ID == "" {
		return routed{}, 0, fmt.Errorf("conversation: no id in %s", clipBody(body))
	}
	start := time.Now()
	body, err = c.call(ctx, http.MethodPost, "/v1/conversations/"+conv.ID+"/messages", map[string]string{"content": m.Text}, http.StatusCreated)
	if err != nil {
		return routed{}, 0, fmt.Errorf("turn %q: %w", m.Text, err)
	}
	took := float64(time.Since(start).Microseconds()) / 1000
	r, err := routedOf(m, body)
	return r, took, err
}

// routedOf reads the routing decision of a chat turn's answer (201:
// user_message, replies, routing) as the bench's outcome for m.
func routedOf(m labelled, body []byte) (routed, error) {
	var t struct {
		Routing *cascade.Decision `json:"routing"`
	}
	if err := json.Unmarshal(body, &t); err != nil {
		return routed{}, fmt.Errorf("the turn's answer: %w", err)
	}
	if t.Routing == nil || len(t.Routing.SelectedAgents) == 0 {
		return routed{}, fmt.Errorf("the turn's answer names no selected agent: %s", clipBody(body))
	}
	d := t.Routing
	return routed{msg: m, agent: d.SelectedAgents[0], skill: d.Skill, confidence: d.Confidence, fallback: d.Fallback}, nil
}

// client calls the API with a team's key, at most rate requests a second
// for all its callers together.
type client struct {
	base, key string
	http      *http.Client
	pace      *time.Ticker
}

func newClient(base, key string, rate float64) *client {
	return &client{base: base, key: key, http: &http.Client{Timeout: 60 * time.Second},
		pace: time.NewTicker(time.Duration(float64(time.Second) / rate))}
}

func (c *client) stop() { c.pace.Stop() }

// maxTries bounds the tries of one request answered 429 or 503 (each
// after the answer's Retry-After).
const maxTries = 5

// call sends method path with body as JSON (none when nil) and returns
// the answer's body when its status is want. A POST carries an
// Idempotency-Key, the same on every try, so a request tried again after
// a 429 or a 503 creates nothing twice.
func (c *client) call(ctx context.Context, method, path string, body any, want int) ([]byte, error) {
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return nil, err
		}
	}
	idem := ""
	if method == http.MethodPost {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		idem = hex.EncodeToString(b)
	}
	for try := 1; ; try++ {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.pace.C:
		}
		req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		req.Header.Set("X-Api-Key", c.key)
		req.Header.Set("Content-Type", "application/json")
		if idem != "" {
			req.Header.Set("Idempotency-Key", idem)
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return nil, err
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		if resp.StatusCode == want {
			return got, nil
		}
		if (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) && try < maxTries {
			wait := time.Second
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
				wait = time.Duration(s) * time.Second
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(wait):
			}
			continue
		}
		return nil, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, clipBody(got))
	}
}

// clipBody is an answer's start, for an error message.
func clipBody(b []byte) string { return clip.Clip(string(b), 300) }
