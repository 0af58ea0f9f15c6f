// Command infra is the CDK app: one Conclave stack per environment, chosen
// with `-c env=<name>` (or CONCLAVE_ENV for `make synth`).
package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
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
	envName := os.Getenv("CONCLAVE_ENV")
	if v, ok := app.Node().TryGetContext(jsii.String("env")).(string); ok && v != "" {
		envName = v
	}
	if envName == "" {
		envName = "dev"
	}
	cfg, err := stack.Lookup(envName)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if v, ok := app.Node().TryGetContext(jsii.String("alarmEmails")).(string); ok && v != "" {
		cfg.AlarmEmails = strings.Split(v, ",")
	}
	if v, ok := app.Node().TryGetContext(jsii.String("logRetentionDays")).(string); ok && v != "" {
		days, err := strconv.Atoi(v)
		if err != nil || days < 1 {
			fmt.Fprintf(os.Stderr, "logRetentionDays must be a positive number of days, got %q\n", v)
			os.Exit(2)
		}
		cfg.LogRetentionDays = days
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
	app.Synth(nil)
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
