// Command edge runs the whole of Conclave on this machine without an AWS
// account or Docker: it starts moto (DynamoDB, SQS, EventBridge and Step
// Functions with the real ASL interpreter), provisions the resources from the
// manifest, and serves the HTTP API, the Lambda Invoke API and the SQS event
// source mappings with the real Go handlers. Everything else is forwarded to
// moto. See localstack/cloud.sh for start and stop.
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
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/conclave-ai/conclave/localstack/cloud"
	"github.com/conclave-ai/conclave/shared/app"
	"github.com/conclave-ai/conclave/shared/demo"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/lambdafn"
	"github.com/conclave-ai/conclave/shared/manifest"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func main() {
	apiPort := flag.Int("api-port", envInt("CONCLAVE_API_PORT", 4580), "port of the HTTP API")
	edgePort := flag.Int("edge-port", envInt("CONCLAVE_EDGE_PORT", 4581), "port of the AWS endpoint (Lambda + forwarding to moto)")
	motoPort := flag.Int("moto-port", envInt("CONCLAVE_MOTO_PORT", 4582), "private port of moto")
	motoBin := flag.String("moto-bin", ".local/venv/bin/moto_server", "moto_server executable")
	stateDir := flag.String("state-dir", ".local", "directory for logs and the cloud.env file")
	stage := flag.String("stage", "local", "stage name used in resource names")
	seed := flag.Bool("seed", true, "seed the demo team and agents")
	flag.Parse()
	if err := run(*apiPort, *edgePort, *motoPort, *motoBin, *stateDir, *stage, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "edge:", err)
		os.Exit(1)
	}
}

func run(apiPort, edgePort, motoPort int, motoBin, stateDir, stage string, seed bool) error {
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

	if err := checkPorts(apiPort, edgePort, motoPort); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	moto, err := startMoto(motoBin, motoPort, edgePort, logDir)
	if err != nil {
		return err
	}
	defer func() {
		_ = syscall.Kill(-moto.Process.Pid, syscall.SIGTERM)
		_, _ = moto.Process.Wait()
	}()
	motoURL := &url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", motoPort)}
	if err := waitMoto(ctx, motoURL); err != nil {
		return err
	}

	edgeURL := fmt.Sprintf("http://127.0.0.1:%d", edgePort)
	awsCfg, motoCfg, err := clientConfigs(ctx, edgeURL, motoURL)
	if err != nil {
		return err
	}

	names := manifest.Names{Stage: stage}
	res, err := cloud.Provision(ctx, motoCfg, names)
	if err != nil {
		return fmt.Errorf("provision: %w", err)
	}
	handlers, err := buildHandlers(lambdafn.Deps{Config: res.AppConfig(), AWS: awsCfg, Log: log})
	if err != nil {
		return err
	}
	edge := cloud.NewEdge(res, handlers, motoURL, log)

	servers, errc := serve(map[int]http.Handler{edgePort: edge.AWSHandler(), apiPort: edge.APIHandler()})
	edge.RunEventSourceMappings(ctx, sqs.NewFromConfig(awsCfg))
	edge.RunSchedules(ctx)

	if seed {
		if err := cloud.Seed(ctx, dynamo.FromConfig(awsCfg, res.Names.Table())); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
	}
	if err := announce(stateDir, logDir, apiPort, edgeURL, stage, moto.Process.Pid); err != nil {
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

func startMoto(bin string, port, edgePort int, logDir string) (*exec.Cmd, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("moto not installed at %s (run make venv): %w", bin, err)
	}
	out, err := os.OpenFile(filepath.Join(logDir, "moto.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	// moto's Step Functions interpreter calls AWS services on
	// localhost:$MOTO_PORT; pointing it at the edge makes task states run
	// the real Go handlers.
	cmd.Env = append(os.Environ(), "MOTO_PORT="+strconv.Itoa(edgePort), "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_DEFAULT_REGION="+cloud.Region)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start moto: %w", err)
	}
	return cmd, nil
}

func waitMoto(ctx context.Context, u *url.URL) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Post(u.String()+"/moto-api/config", "application/json", bytes.NewBufferString(`{"stepfunctions":{"execute_state_machine":true}}`))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode < 300 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return errors.New("moto did not start within 60s (see moto.log)")
}

// checkPorts fails early, with the variables to change, when a port is taken.
func checkPorts(ports ...int) error {
	for _, p := range ports {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			return fmt.Errorf("port %d is in use (set CONCLAVE_API_PORT, CONCLAVE_EDGE_PORT, CONCLAVE_MOTO_PORT): %w", p, err)
		}
		l.Close()
	}
	return nil
}

// clientConfigs are the AWS configurations of the handlers (talking to the
// edge, as a Lambda talks to AWS) and of provisioning (straight to moto).
func clientConfigs(ctx context.Context, edgeURL string, motoURL *url.URL) (aws.Config, aws.Config, error) {
	for k, v := range map[string]string{"AWS_REGION": cloud.Region, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_ENDPOINT_URL": edgeURL} {
		os.Setenv(k, v)
	}
	os.Unsetenv("AWS_PROFILE")
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return aws.Config{}, aws.Config{}, err
	}
	motoCfg := awsCfg.Copy()
	motoCfg.BaseEndpoint = aws.String(motoURL.String())
	return awsCfg, motoCfg, nil
}

// buildHandlers wires every function of the manifest with its own builder,
// as each would be wired in its own Lambda.
func buildHandlers(d lambdafn.Deps) (map[string]any, error) {
	handlers := map[string]any{}
	for _, f := range manifest.Functions {
		h, err := app.Handler(f.Name, d)
		if err != nil {
			return nil, err
		}
		handlers[f.Name] = h
	}
	return handlers, nil
}

// announce writes cloud.env (what tests and cloud.sh read) and prints how
// to reach the API.
func announce(stateDir, logDir string, apiPort int, edgeURL, stage string, motoPID int) error {
	baseURL := fmt.Sprintf("http://127.0.0.1:%d", apiPort)
	envFile := fmt.Sprintf("CONCLAVE_BASE_URL=%s\nCONCLAVE_API_KEY=%s\nCONCLAVE_OTHER_API_KEY=%s\nCONCLAVE_EDGE_URL=%s\nCONCLAVE_STAGE=%s\nCONCLAVE_EDGE_PID=%d\nCONCLAVE_MOTO_PID=%d\n",
		baseURL, demo.APIKey, demo.OtherAPIKey, edgeURL, stage, os.Getpid(), motoPID)
	if err := os.WriteFile(filepath.Join(stateDir, "cloud.env"), []byte(envFile), 0o644); err != nil {
		return err
	}
	fmt.Printf("Conclave local cloud is up.\n  API:      %s/v1\n  API key:  %s\n  AWS edge: %s (AWS_ENDPOINT_URL)\n  logs:     %s\nTry: curl -H 'X-Api-Key: %s' %s/v1/agents\nPress Ctrl-C to stop.\n",
		baseURL, demo.APIKey, edgeURL, logDir, demo.APIKey, baseURL)
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
