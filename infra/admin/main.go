// Command admin manages teams and API keys of a stage by invoking its admin
// function with the Lambda Invoke API, so it works the same against the local
// cloud (the edge serves Invoke) and a deployed stage (your AWS credentials).
//
//	go run ./infra/admin [-stage local] [-endpoint http://127.0.0.1:4581] create-team "Acme"
//	go run ./infra/admin -stage dev issue-key  <team id> [name]
//	go run ./infra/admin -stage dev -act-as-users issue-key <team id> [name]
//	go run ./infra/admin -stage dev rotate-key <team id> <key id>
//	go run ./infra/admin -stage dev revoke-key <team id> <key id>
//	go run ./infra/admin -stage dev list-keys  <team id>
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/team/admin"
)

func main() {
	stage := flag.String("stage", "local", "stage whose admin function to invoke")
	endpoint := flag.String("endpoint", "", "AWS endpoint (default: AWS, or the local edge for -stage local)")
	actAsUsers := flag.Bool("act-as-users", false, "issue-key: the key may act for a user with X-Conclave-User (docs/api.md)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: admin [-stage S] [-endpoint URL] create-team NAME | issue-key TEAM [NAME] | rotate-key TEAM KEY | revoke-key TEAM KEY | list-keys TEAM")
		flag.PrintDefaults()
	}
	flag.Parse()
	req, err := parse(flag.Args())
	if err == nil && *actAsUsers {
		if req.Action != admin.ActionIssueKey {
			err = fmt.Errorf("-act-as-users goes with issue-key only")
		}
		req.ActAsUsers = true
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		flag.Usage()
		os.Exit(2)
	}
	ctx := context.Background()
	opts := []func(*config.LoadOptions) error{}
	if *endpoint == "" && *stage == "local" {
		*endpoint = "http://127.0.0.1:4581"
	}
	if *endpoint != "" {
		opts = append(opts, config.WithBaseEndpoint(*endpoint))
		if os.Getenv("AWS_ACCESS_KEY_ID") == "" {
			os.Setenv("AWS_ACCESS_KEY_ID", "test")
			os.Setenv("AWS_SECRET_ACCESS_KEY", "test")
		}
		if os.Getenv("AWS_REGION") == "" {
			opts = append(opts, config.WithRegion("us-east-1"))
		}
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "aws config:", err)
		os.Exit(1)
	}
	payload, _ := json.Marshal(req)
	out, err := lambda.NewFromConfig(cfg).Invoke(ctx, &lambda.InvokeInput{
		FunctionName: aws.String(manifest.Names{Stage: *stage}.Function("admin")),
		Payload:      payload,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "invoke:", err)
		os.Exit(1)
	}
	if out.FunctionError != nil {
		fmt.Fprintln(os.Stderr, "admin function failed:", string(out.Payload))
		os.Exit(1)
	}
	var resp admin.Response
	if err := json.Unmarshal(out.Payload, &resp); err != nil {
		fmt.Fprintln(os.Stderr, "bad response:", err)
		os.Exit(1)
	}
	if resp.Error != nil {
		fmt.Fprintf(os.Stderr, "%s: %s\n", resp.Error.Code, resp.Error.Message)
		os.Exit(1)
	}
	if resp.Team != nil {
		fmt.Printf("team:    %s (%s)\n", resp.Team.ID, resp.Team.Name)
	}
	if resp.Key != nil {
		fmt.Printf("key id:  %s\napi key: %s\n(the key is shown once; store it now)\n", resp.Key.ID, resp.Key.Secret)
	}
	for _, k := range resp.Keys {
		fmt.Printf("%s  %-8s %s  %s\n", k.ID, k.Status, k.Prefix, k.Name)
	}
}

func parse(args []string) (admin.Request, error) {
	if len(args) == 0 {
		return admin.Request{}, fmt.Errorf("missing command")
	}
	need := func(n int) error {
		if len(args) < n+1 {
			return fmt.Errorf("%s needs %d argument(s)", args[0], n)
		}
		return nil
	}
	switch args[0] {
	case admin.ActionCreateTeam:
		if err := need(1); err != nil {
			return admin.Request{}, err
		}
		return admin.Request{Action: args[0], Name: args[1]}, nil
	case admin.ActionIssueKey:
		if err := need(1); err != nil {
			return admin.Request{}, err
		}
		r := admin.Request{Action: args[0], TeamID: args[1]}
		if len(args) > 2 {
			r.KeyName = args[2]
		}
		return r, nil
	case admin.ActionRotateKey, admin.ActionRevokeKey:
		if err := need(2); err != nil {
			return admin.Request{}, err
		}
		return admin.Request{Action: args[0], TeamID: args[1], KeyID: args[2]}, nil
	case admin.ActionListKeys:
		if err := need(1); err != nil {
			return admin.Request{}, err
		}
		return admin.Request{Action: args[0], TeamID: args[1]}, nil
	}
	return admin.Request{}, fmt.Errorf("unknown command %q", args[0])
}
