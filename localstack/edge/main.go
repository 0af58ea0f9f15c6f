// Command edge runs the whole of Conclave on this machine without an AWS
// account or Docker: it starts DynamoDB Local (AWS's own engine, in memory)
// and moto (SQS, EventBridge and Step Functions with the real ASL
// interpreter), provisions the resources from the manifest, and serves the
// HTTP API, the Lambda Invoke API and the SQS event source mappings with the
// real Go handlers. It answers Amazon Bedrock's Converse itself (checked
// against botocore's service model, written by the deterministic model).
// Every other AWS call is forwarded by service: DynamoDB to DynamoDB Local,
// the rest to moto. See localstack/cloud.sh for start and stop.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/conclave-ai/conclave/localstack/cloud"
	"github.com/conclave-ai/conclave/localstack/servicemodel"
	"github.com/conclave-ai/conclave/shared/aws/eventbus"
	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/routing/wordllama"
	"github.com/conclave-ai/conclave/shared/store/agentstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/testkit/demo"
	"github.com/conclave-ai/conclave/shared/wire"
	"github.com/conclave-ai/conclave/shared/wire/providers"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func main() {
	apiPort := flag.Int("api-port", envInt("CONCLAVE_API_PORT", 4580), "port of the HTTP API")
	// The streaming API's port: CONCLAVE_STREAM_PORT, or the HTTP API's
	// plus 10000, so every cloud (run, test, soak, load, faults) that
	// sets its own API port has its own streaming port without a variable
	// more.
	streamPort := flag.Int("stream-port", envInt("CONCLAVE_STREAM_PORT", 0), "port of the streaming API (0: the HTTP API's port + 10000)")
	edgePort := flag.Int("edge-port", envInt("CONCLAVE_EDGE_PORT", 4581), "port of the AWS endpoint (Lambda + forwarding to moto)")
	motoPort := flag.Int("moto-port", envInt("CONCLAVE_MOTO_PORT", 4582), "private port of moto")
	dynamoPort := flag.Int("dynamo-port", envInt("CONCLAVE_DYNAMO_PORT", 4583), "private port of DynamoDB Local")
	motoBin := flag.String("moto-bin", ".local/venv/bin/moto_server", "moto_server executable")
	venv := flag.String("venv", ".local/venv", "moto's virtualenv, whose botocore has the bedrock-runtime service model the edge checks Bedrock calls against")
	dynamoLib := flag.String("dynamo-lib", ".local/dynamodb/lib", "directory of DynamoDB Local's jars and native libraries (localstack/cloud.sh fetches it)")
	stateDir := flag.String("state-dir", ".local", "directory for logs and the cloud.env file")
	stage := flag.String("stage", "local", "stage name used in resource names")
	seed := flag.Bool("seed", true, "seed the demo team and agents")
	retry := flag.Int("sqs-retry-seconds", envInt("CONCLAVE_SQS_RETRY_SECONDS", 0), "retry failed SQS messages after this many seconds instead of the queue's visibility timeout (0: as AWS does)")
	flag.Parse()
	if *streamPort == 0 {
		*streamPort = *apiPort + 10000
	}
	p := ports{api: *apiPort, stream: *streamPort, edge: *edgePort, moto: *motoPort, dynamo: *dynamoPort}
	retryDelay = time.Duration(*retry) * time.Second
	if err := run(p, *motoBin, *venv, *dynamoLib, *stateDir, *stage, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "edge:", err)
		os.Exit(1)
	}
}

// retryDelay is -sqs-retry-seconds.
var retryDelay time.Duration

// ports are the edge's public ports (API, AWS endpoint) and the private
// ports of the processes behind it.
type ports struct{ api, stream, edge, moto, dynamo int }

// run brings the local cloud up (DynamoDB Local and moto, the edge in
// front of them), announces it in cloud.env and serves until interrupted;
// each step's defer stops what it started, in reverse order.
func run(p ports, motoBin, venv, dynamoLib, stateDir, stage string, seed bool) error {
	logDir := filepath.Join(stateDir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}
	logFile, err := os.OpenFile(filepath.Join(logDir, "edge.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	log := slog.New(slog.NewJSONHandler(logFile, nil))
	_ = os.Remove(filepath.Join(stateDir, "cloud.env"))

	if err := checkPorts(p.api, p.stream, p.edge, p.moto, p.dynamo); err != nil {
		return err
	}
	// The console on the API's port streams from the streaming API's.
	cloud.ListConsoleOrigins(p.api)
	bedrockModel, err := loadBedrockModel(venv)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	ddb, moto, err := startBackends(ctx, p, motoBin, dynamoLib, logDir)
	defer stopProcess(moto)
	defer stopProcess(ddb)
	if err != nil {
		return err
	}
	motoURL := &url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", p.moto)}
	dynamoURL := &url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", p.dynamo)}

	edgeURL := fmt.Sprintf("http://127.0.0.1:%d", p.edge)
	streamURL := fmt.Sprintf("http://127.0.0.1:%d", p.stream)
	// The console signs people in with the demo team's issuer.
	consoleIssuer := fmt.Sprintf("http://127.0.0.1:%d/oidc/demo", p.api)
	edge, awsCfg, res, err := newEdge(ctx, edgeURL, streamURL, consoleIssuer, dynamoURL, motoURL, stage, bedrockModel, log)
	if err != nil {
		return err
	}

	issuers := cloud.NewIssuers(fmt.Sprintf("http://127.0.0.1:%d/oidc", p.api), cloud.LocalCORS().Origins...)
	servers, errc := serve(map[int]http.Handler{p.edge: edge.AWSHandler(), p.api: apiHandler(edge, issuers), p.stream: cloud.LocalCORS().Wrap(edge.StreamAPIHandler())})
	edge.RunEventSourceMappings(ctx, sqs.NewFromConfig(awsCfg))
	edge.RunSchedules(ctx)

	if seed {
		if err := seedDemo(ctx, awsCfg, res, issuers); err != nil {
			return err
		}
	}
	pids := map[string]int{"CONCLAVE_MOTO_PID": moto.Process.Pid, "CONCLAVE_DYNAMO_PID": ddb.Process.Pid}
	if err := announce(stateDir, logDir, p, edgeURL, stage, pids); err != nil {
		return err
	}

	select {
	case <-ctx.Done():
	case err := <-errc:
		return err
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range servers {
		_ = s.Shutdown(shut)
	}
	_ = os.Remove(filepath.Join(stateDir, "cloud.env"))
	fmt.Println("stopped")
	return nil
}

// apiHandler is the HTTP API's port: the API, and the local OpenID
// Connect issuers under /oidc/ (localstack/cloud/oidc.go), which share
// the port so that clouds on other ports never collide.
func apiHandler(edge *cloud.Edge, issuers *cloud.Issuers) http.Handler {
	api := http.NewServeMux()
	// A browser app redeems its code with a fetch from its own origin.
	api.Handle("/oidc/", cloud.LocalCORS().Wrap(issuers))
	// Preflights are answered before any route or authorizer, as the
	// stages' gateways answer them (localstack/cloud/cors.go).
	api.Handle("/", cloud.LocalCORS().Wrap(edge.APIHandler()))
	return api
}

// seedDemo seeds the demo teams and registers the local issuers with them.
func seedDemo(ctx context.Context, awsCfg aws.Config, res cloud.Resources, issuers *cloud.Issuers) error {
	core := dynamo.FromConfig(awsCfg, res.Names.Table())
	if err := cloud.Seed(ctx, core, eventbus.FromConfig(awsCfg, res.Names.Bus())); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	if err := cloud.SeedIdentity(ctx, core, issuers); err != nil {
		return fmt.Errorf("seed identity: %w", err)
	}
	return nil
}

// startBackends starts DynamoDB Local and moto at once (the JVM's start-up
// overlaps moto's) and waits until both answer. What it started is
// returned even with an error, for the caller to stop (stopProcess takes
// nil).
func startBackends(ctx context.Context, p ports, motoBin, dynamoLib, logDir string) (ddb, moto *exec.Cmd, err error) {
	if ddb, err = startDynamoDB(dynamoLib, p.dynamo, logDir); err != nil {
		return nil, nil, err
	}
	if moto, err = startMoto(motoBin, p.moto, p.edge, logDir); err != nil {
		return ddb, nil, err
	}
	if err := waitMoto(ctx, &url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", p.moto)}); err != nil {
		return ddb, moto, err
	}
	return ddb, moto, waitDynamoDB(ctx, &url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", p.dynamo)})
}

// newEdge provisions the cloud's resources on the started backends and
// builds the edge in front of them: every function's handler, Bedrock's
// Converse and Titan's embeddings answered locally.
func newEdge(ctx context.Context, edgeURL, streamURL, consoleIssuer string, dynamoURL, motoURL *url.URL, stage string, bedrockModel *servicemodel.Model, log *slog.Logger) (*cloud.Edge, aws.Config, cloud.Resources, error) {
	awsCfg, backends, err := clientConfigs(ctx, edgeURL, dynamoURL, motoURL)
	if err != nil {
		return nil, aws.Config{}, cloud.Resources{}, err
	}

	names := manifest.Names{Stage: stage}
	res, err := cloud.Provision(ctx, backends, names)
	if err != nil {
		return nil, aws.Config{}, cloud.Resources{}, fmt.Errorf("provision: %w", err)
	}
	// The A2A agent card lists the agent's streaming endpoint there.
	res.StreamURL = streamURL
	res.ConsoleIssuer = consoleIssuer
	// The functions' spans come back to the edge (cloud.Traces).
	res.TraceEndpoint = edgeURL + cloud.OTLPTracesPath
	// The functions' clients honour the stalls tests inject
	// (localstack/cloud/faults.go); nothing stalls unless a test asks.
	fnCfg := awsCfg.Copy()
	cloud.InstrumentFaults(&fnCfg)
	// A function's spans leave after its answer, as the tracing extension
	// sends them in Lambda (lambdafn.Deps.AfterAnswer): here the process
	// is never frozen, so a goroutine is the post-invoke phase.
	handlers, err := buildHandlers(res, lambdafn.Deps{AWS: fnCfg, Log: log, AfterAnswer: func(flush func()) { go flush() }})
	if err != nil {
		return nil, aws.Config{}, cloud.Resources{}, err
	}
	edge := cloud.NewEdge(res, handlers, dynamoURL, motoURL, log)
	edge.RetryDelay = retryDelay
	// Bedrock's Converse answered here: the deterministic model reads the
	// agent a call is attributed to straight from DynamoDB Local (the
	// edge's own reads are no function's calls).
	agentsTable := agentstore.New(dynamodb.NewFromConfig(backends.DynamoDB), res.Names.Table())
	edge.Bedrock = cloud.NewBedrock(bedrockModel, providers.Local(agentsTable), log)
	// The streaming benchmark's reference: Converse as slow as a model
	// writing the whole reply (cloud.Bedrock.PaceConverse).
	edge.Bedrock.PaceConverse = os.Getenv("CONCLAVE_BEDROCK_PACE") == "1"
	// CONCLAVE_BEDROCK_CHUNK_DELAY (a Go duration) replaces the pause
	// between two streamed pieces: make test's cloud sets a slower pace,
	// so the console's browser test sees a reply grow over several frames
	// even when a loaded machine starves the browser for a few hundred ms.
	if v := os.Getenv("CONCLAVE_BEDROCK_CHUNK_DELAY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return nil, aws.Config{}, cloud.Resources{}, fmt.Errorf("CONCLAVE_BEDROCK_CHUNK_DELAY=%q: a duration such as 80ms", v)
		}
		edge.Bedrock.StreamChunkDelay = d
	}
	// Titan Text Embeddings (ROUTING_EMBEDDER=titan) answered with the
	// wordllama vector of the text, loaded on the first request.
	edge.Bedrock.Embedder = sync.OnceValues(func() (cloud.TextEmbedder, error) {
		dir, err := wordllama.Dir()
		if err != nil {
			return nil, err
		}
		return wordllama.Load(dir)
	})
	return edge, awsCfg, res, nil
}

// loadBedrockModel reads the bedrock-runtime service model of the botocore
// in moto's virtualenv.
func loadBedrockModel(venv string) (*servicemodel.Model, error) {
	path, err := servicemodel.Find(venv, "bedrock-runtime")
	if err != nil {
		return nil, err
	}
	return servicemodel.Load(path)
}

func startMoto(bin string, port, edgePort int, logDir string) (*exec.Cmd, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("moto not installed at %s (run make venv): %w", bin, err)
	}
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	// moto's Step Functions interpreter calls AWS services on
	// localhost:$MOTO_PORT; pointing it at the edge makes task states run
	// the real Go handlers and DynamoDB integrations reach DynamoDB Local.
	cmd.Env = append(os.Environ(), "MOTO_PORT="+strconv.Itoa(edgePort), "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_DEFAULT_REGION="+cloud.Region)
	return startProcess(cmd, "moto", logDir)
}

// startDynamoDB runs DynamoDB Local in memory. -sharedDb makes one database
// for every access key and region (the handlers, the tests and moto's
// interpreter sign with different ones). The heap cap keeps a long `make
// run` from growing without bound; the serial collector suits a two-core
// laptop better than the default. TieredStopAtLevel=1 keeps to the quick
// JIT compiler: the optimizing one spent about a third of the JVM's CPU of
// a `make test` compiling (30 s of 2 cores' time, shared with the tests),
// and the calls it serves are SQLite's work, as fast either way (a few
// hundred transactions a second through 8 clients, measured both ways).
func startDynamoDB(lib string, port int, logDir string) (*exec.Cmd, error) {
	lib, err := filepath.Abs(lib)
	if err != nil {
		return nil, err
	}
	jar := filepath.Join(lib, "DynamoDBLocal-"+dynamoDBVersion+".jar")
	if _, err := os.Stat(jar); err != nil {
		return nil, fmt.Errorf("DynamoDB Local not found at %s (localstack/cloud.sh up fetches it with Maven): %w", jar, err)
	}
	java := os.Getenv("JAVA")
	if java == "" {
		java = "java"
	}
	cmd := exec.Command(java, "-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.library.path="+lib,
		"-cp", filepath.Join(lib, "*"), "com.amazonaws.services.dynamodbv2.local.main.ServerRunner",
		"-inMemory", "-sharedDb", "-port", strconv.Itoa(port))
	// It writes dynamodb-local-metadata.json into its working directory.
	cmd.Dir = logDir
	return startProcess(cmd, "dynamodb", logDir)
}

// dynamoDBVersion is the DynamoDB Local pinned in localstack/dynamodb/pom.xml
// (a unit test keeps the two equal).
const dynamoDBVersion = "2.6.1"

// startProcess starts cmd in its own process group, logging to
// logDir/name.log; it dies with the edge (Pdeathsig) and stopProcess ends it.
func startProcess(cmd *exec.Cmd, name, logDir string) (*exec.Cmd, error) {
	out, err := os.OpenFile(filepath.Join(logDir, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return cmd, nil
}

func stopProcess(cmd *exec.Cmd) {
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	_, _ = cmd.Process.Wait()
}

// waitFor polls ready until it answers true or the deadline passes.
func waitFor(ctx context.Context, what string, ready func() bool) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if ready() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s did not start within 60s (see its log in the logs directory)", what)
}

func waitMoto(ctx context.Context, u *url.URL) error {
	return waitFor(ctx, "moto", func() bool {
		resp, err := http.Post(u.String()+"/moto-api/config", "application/json", bytes.NewBufferString(`{"stepfunctions":{"execute_state_machine":true}}`))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode < 300
	})
}

// waitDynamoDB waits for DynamoDB Local to answer a ListTables call.
func waitDynamoDB(ctx context.Context, u *url.URL) error {
	return waitFor(ctx, "DynamoDB Local", func() bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewBufferString(`{}`))
		req.Header.Set("X-Amz-Target", "DynamoDB_20120810.ListTables")
		req.Header.Set("Content-Type", "application/x-amz-json-1.0")
		req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=test/20260101/"+cloud.Region+"/dynamodb/aws4_request, SignedHeaders=host, Signature=0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// checkPorts fails early, with the variables to change, when a port is taken.
func checkPorts(ports ...int) error {
	for _, p := range ports {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			return fmt.Errorf("port %d is in use (set CONCLAVE_API_PORT, CONCLAVE_STREAM_PORT, CONCLAVE_EDGE_PORT, CONCLAVE_MOTO_PORT, CONCLAVE_DYNAMO_PORT): %w", p, err)
		}
		l.Close()
	}
	return nil
}

// clientConfigs are the AWS configurations of the handlers (talking to the
// edge, as a Lambda talks to AWS) and of provisioning (straight to each
// backend: the edge serves only once the handlers exist).
func clientConfigs(ctx context.Context, edgeURL string, dynamoURL, motoURL *url.URL) (aws.Config, cloud.Backends, error) {
	for k, v := range map[string]string{"AWS_REGION": cloud.Region, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_ENDPOINT_URL": edgeURL} {
		os.Setenv(k, v)
	}
	os.Unsetenv("AWS_PROFILE")
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return aws.Config{}, cloud.Backends{}, err
	}
	b := cloud.Backends{DynamoDB: awsCfg.Copy(), Moto: awsCfg.Copy()}
	b.DynamoDB.BaseEndpoint = aws.String(dynamoURL.String())
	b.Moto.BaseEndpoint = aws.String(motoURL.String())
	return awsCfg, b, nil
}

// buildHandlers wires every function of the manifest with its own builder
// and its own configuration, as each would be wired in its own Lambda: a
// variable a function declares that is missing or malformed stops the
// start, naming it.
func buildHandlers(res cloud.Resources, d lambdafn.Deps) (map[string]any, error) {
	handlers := map[string]any{}
	for _, f := range manifest.Functions {
		cfg, err := res.FunctionConfig(f.Name)
		if err != nil {
			return nil, fmt.Errorf("configuration of %s: %w", f.Name, err)
		}
		d.Config = cfg
		h, err := wire.Handler(f.Name, d)
		if err != nil {
			return nil, err
		}
		handlers[f.Name] = h
	}
	return handlers, nil
}

// announce writes cloud.env (what tests and cloud.sh read) and prints how
// to reach the API.
func announce(stateDir, logDir string, p ports, edgeURL, stage string, pids map[string]int) error {
	baseURL := fmt.Sprintf("http://127.0.0.1:%d", p.api)
	streamURL := fmt.Sprintf("http://127.0.0.1:%d", p.stream)
	envFile := fmt.Sprintf("CONCLAVE_BASE_URL=%s\nCONCLAVE_STREAM_URL=%s\nCONCLAVE_API_KEY=%s\nCONCLAVE_OTHER_API_KEY=%s\nCONCLAVE_EDGE_URL=%s\nCONCLAVE_STAGE=%s\nCONCLAVE_EDGE_PID=%d\n",
		baseURL, streamURL, demo.APIKey, demo.OtherAPIKey, edgeURL, stage, os.Getpid())
	// The demo team's issuer (make token; the other team's is .../oidc/other).
	envFile += fmt.Sprintf("CONCLAVE_OIDC_ISSUER=%s/oidc/demo\n", baseURL)
	for _, k := range []string{"CONCLAVE_DYNAMO_PID", "CONCLAVE_MOTO_PID"} {
		envFile += fmt.Sprintf("%s=%d\n", k, pids[k])
	}
	if err := os.WriteFile(filepath.Join(stateDir, "cloud.env"), []byte(envFile), 0o644); err != nil {
		return err
	}
	fmt.Printf("Conclave local cloud is up.\n  Console:  %s/console/ (sign in as any demo user, or with the key; docs/console.md)\n  API:      %s/v1\n  Streams:  %s/v1 (CONCLAVE_STREAM_URL, docs/streaming.md)\n  API key:  %s\n  A2A:      %s/a2a/%s (the demo team's agent, docs/a2a.md)\n  AWS edge: %s (AWS_ENDPOINT_URL)\n  logs:     %s\nTry: curl -H 'X-Api-Key: %s' %s/v1/agents\nPress Ctrl-C to stop.\n",
		baseURL, baseURL, streamURL, demo.APIKey, baseURL, demo.A2AID, edgeURL, logDir, demo.APIKey, baseURL)
	return nil
}

// serve listens on each port with its handler; errc reports the first
// server that fails.
func serve(byPort map[int]http.Handler) ([]*http.Server, chan error) {
	var servers []*http.Server
	errc := make(chan error, len(byPort))
	for port, h := range byPort {
		s := &http.Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), Handler: h, ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, s)
		go func() {
			if err := s.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	return servers, errc
}
