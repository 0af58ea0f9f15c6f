// Command infra is the CDK app: one Conclave stack per environment, chosen
// with `-c env=<name>` (or CONCLAVE_ENV for `make synth`).
package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/conclave-ai/conclave/infra/stack"
)

func main() {
	defer jsii.Close()
	// The feature flags of cdk.json, so `go run .` (make synth) synthesizes
	// what `cdk deploy` would; the CLI's own context still wins over them.
	flags, err := stack.ContextFromFile("cdk.json")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintln(os.Stderr, "warning: no cdk.json in the working directory; synthesizing without its feature flags (run from infra/)")
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &flags})
	// CONCLAVE_ENV may name several stages, comma-separated (the
	// template checks synthesize dev and prod in one process: one load of
	// the CDK library instead of one per stage); -c env=… names one, and
	// wins.
	names := strings.Split(os.Getenv("CONCLAVE_ENV"), ",")
	if app.Node().TryGetContext(jsii.String(stack.ContextEnv)) != nil {
		names = []string{""}
	}
	for _, name := range names {
		if err := addStack(app, strings.TrimSpace(name)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	app.Synth(nil)
}

// addStack adds the Conclave stack of the stage the context names (-c
// env=…), or else name, with what the deploy chose for it: -c
// alarmEmails=…, -c logRetentionDays=N (stack.ConfigFromContext).
func addStack(app awscdk.App, name string) error {
	cfg, err := stack.ConfigFromContext(app.Node(), name)
	if err != nil {
		return err
	}
	dist := os.Getenv("CONCLAVE_DIST")
	if dist == "" {
		dist = "../dist"
	}
	props := &stack.Props{Env: cfg, AssetDir: dist}
	account, region := cfg.Account, cfg.Region
	if account == "" {
		account = os.Getenv("CDK_DEFAULT_ACCOUNT")
	}
	if region == "" {
		region = os.Getenv("CDK_DEFAULT_REGION")
	}
	if account != "" || region != "" {
		props.StackProps.Env = &awscdk.Environment{Account: strPtr(account), Region: strPtr(region)}
	}
	stack.NewConclaveStack(app, "Conclave-"+cfg.Name, props)
	// The stage's Cognito user pool, when it asks for one (-c
	// cognito=true): a stack of its own.
	stack.NewIdentityStack(app, "Conclave-"+cfg.Name+"-Identity", &stack.IdentityStackProps{StackProps: props.StackProps, Env: cfg})
	return nil
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
