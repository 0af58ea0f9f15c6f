// Package lambdafn is the bootstrap every function's main shares: it loads
// the AWS configuration and the environment contract once per cold start,
// hands them to the function's own builder and starts the Lambda runtime.
// It links no AWS service client: each builder (shared/app/<name>fn) links
// exactly the clients its function is granted.
package lambdafn

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/conclave-ai/conclave/shared/settings"
)

// Deps is what a builder gets: its name in the manifest, its environment,
// the loaded AWS configuration and its logger.
type Deps struct {
	Name   string
	Config settings.Config
	AWS    aws.Config
	Log    *slog.Logger
}

// Build wires one function and returns its Lambda handler (any type
// lambda.NewHandler accepts). Builders never load configuration or exit.
type Build func(Deps) (any, error)

// NewLogger returns the JSON logger every function uses.
func NewLogger(function string) *slog.Logger {
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("function", function)
}

// Main is the whole main() of a function: load configuration once per cold
// start, wire, and hand the handler to the Lambda runtime.
func Main(name string, build Build) {
	log := NewLogger(name)
	awsCfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Error("load aws config", "error", err.Error())
		os.Exit(1)
	}
	h, err := build(Deps{Name: name, Config: settings.FromEnv(), AWS: awsCfg, Log: log})
	if err != nil {
		log.Error("wire", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(h)
}
