package stack

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscognito"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// The context keys of a stage's identity provider: the OpenID Connect
// issuer a browser or mobile app signs its people in with, which a team
// then registers (PUT /v1/team/identity; docs/operations.md, "Signing
// people in"). Registration stays the team's: the stack only makes the
// issuer (or names one) and outputs what the app and the registration
// need. Both are optional, and a stage has one or neither.
const (
	// ContextCognito=true gives the stage a Cognito user pool, a hosted
	// sign-in domain and a public client (authorization code with PKCE,
	// no secret) for the URLs cognito.callbackUrls lists.
	ContextCognito = "cognito"
	// ContextCognitoCallbacks lists the client's callback URLs (a string,
	// comma-separated, or a list): https, or http on localhost or
	// 127.0.0.1 in a dev stage; required with cognito=true.
	ContextCognitoCallbacks = "cognito.callbackUrls"
	// ContextCognitoDomain is the hosted domain's prefix (unique in the
	// region across accounts); absent, <stage prefix>-<account id>.
	ContextCognitoDomain = "cognito.domainPrefix"
	// ContextIssuer and ContextIssuerClient name an issuer the stage does
	// not make (Auth0, Entra ID, Google, another account's pool): an https
	// URL and the app's client id, output as a pool's would be.
	ContextIssuer       = "identity.issuer"
	ContextIssuerClient = "identity.clientId"
)

// CognitoAdminGroup is the user pool group whose members are admins: a
// team registers admin_claim cognito:groups, admin_value CognitoAdminGroup.
const CognitoAdminGroup = "admins"

// IdentityConfig is a stage's identity provider (the context keys above).
type IdentityConfig struct {
	// Cognito makes a user pool with a client for CallbackURLs.
	Cognito      bool
	CallbackURLs []string
	DomainPrefix string
	// Issuer and ClientID name an external issuer instead.
	Issuer, ClientID string
}

// domainPrefix is Cognito's rule for a hosted domain's prefix.
var domainPrefix = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$`)

// clientID is the shape of a client id the stage outputs.
var clientID = regexp.MustCompile(`^[A-Za-z0-9._:@|+-]{1,255}$`)

// setIdentity applies one identity context key to id.
func setIdentity(id *IdentityConfig, stage, key string, v any) error {
	s, isString := v.(string)
	s = strings.TrimSpace(s)
	switch key {
	case ContextCognito:
		b, ok := v.(bool)
		if !ok && isString && (s == "true" || s == "false") {
			b, ok = s == "true", true
		}
		if !ok {
			return fmt.Errorf("-c %s must be true or false, got %v", key, v)
		}
		id.Cognito = b
	case ContextCognitoCallbacks:
		urls, err := parseCallbacks(stage, v)
		id.CallbackURLs = urls
		return err
	case ContextCognitoDomain:
		if !domainPrefix.MatchString(s) || strings.Contains(s, "aws") || strings.Contains(s, "amazon") || strings.Contains(s, "cognito") {
			return fmt.Errorf("-c %s: %v is not a domain prefix (a-z 0-9 -, at most 63, without aws, amazon or cognito)", key, v)
		}
		id.DomainPrefix = s
	case ContextIssuer:
		u, err := url.Parse(s)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("-c %s: %v is not an https issuer URL", key, v)
		}
		id.Issuer = strings.TrimSuffix(s, "/")
	case ContextIssuerClient:
		if !clientID.MatchString(s) {
			return fmt.Errorf("-c %s: %v is not a client id", key, v)
		}
		id.ClientID = s
	default:
		return fmt.Errorf("-c %s: unknown key (want %s)", key,
			strings.Join([]string{ContextCognito, ContextCognitoCallbacks, ContextCognitoDomain, ContextIssuer, ContextIssuerClient}, ", "))
	}
	return nil
}

// isIdentityKey reports whether key is one of the identity context's.
func isIdentityKey(key string) bool {
	return key == ContextCognito || strings.HasPrefix(key, ContextCognito+".") || strings.HasPrefix(key, "identity.")
}

// check returns an error for keys that make sense only together.
func (id IdentityConfig) check() error {
	var errs []error
	if id.Cognito && len(id.CallbackURLs) == 0 {
		errs = append(errs, fmt.Errorf("-c %s=true needs -c %s", ContextCognito, ContextCognitoCallbacks))
	}
	if !id.Cognito && (len(id.CallbackURLs) > 0 || id.DomainPrefix != "") {
		errs = append(errs, fmt.Errorf("-c %s and %s need -c %s=true", ContextCognitoCallbacks, ContextCognitoDomain, ContextCognito))
	}
	if (id.Issuer == "") != (id.ClientID == "") {
		errs = append(errs, fmt.Errorf("-c %s and -c %s go together", ContextIssuer, ContextIssuerClient))
	}
	if id.Cognito && id.Issuer != "" {
		errs = append(errs, fmt.Errorf("-c %s=true and -c %s: a stage has one identity provider", ContextCognito, ContextIssuer))
	}
	return errors.Join(errs...)
}

// parseCallbacks reads callback URLs: https, or http on a loopback host
// with a port in a dev stage; no fragment, none twice.
func parseCallbacks(stage string, v any) ([]string, error) {
	parts, err := contextList(ContextCognitoCallbacks, "a URL", "URLs", v)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, raw := range parts {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" || u.User != nil || u.Fragment != "" || strings.Contains(raw, "#") {
			return nil, fmt.Errorf("-c %s: %q is not a callback URL", ContextCognitoCallbacks, raw)
		}
		if err := checkOrigin(stage, u.Scheme+"://"+u.Host); err != nil {
			return nil, fmt.Errorf("-c %s: %w", ContextCognitoCallbacks, err)
		}
		if slices.Contains(out, raw) {
			return nil, fmt.Errorf("-c %s: %q given twice", ContextCognitoCallbacks, raw)
		}
		out = append(out, raw)
	}
	return out, nil
}

// IdentityStackProps configure the stage's identity stack.
type IdentityStackProps struct {
	awscdk.StackProps
	// Env is the stage's configuration; its Identity says what to make.
	Env EnvConfig
}

// IdentityStack is the stage's Cognito user pool, its admins group,
// hosted domain and the app's client.
type IdentityStack struct {
	awscdk.Stack
	Pool   awscognito.UserPool
	Client awscognito.UserPoolClient
	Domain awscognito.UserPoolDomain
}

// NewIdentityStack adds the stage's Cognito stack to scope, or nothing
// (nil) when the stage does not ask for one. It outputs the issuer URL
// and client id a team registers and the app signs in with
// (IdentityIssuerUrl, IdentityClientId) and the hosted sign-in's base
// URL. A stack of its own: a user pool holds people and outlives a
// redeploy of the application, and the application's stack is at
// CloudFormation's 500 resources with CORS on.
func NewIdentityStack(scope constructs.Construct, id string, props *IdentityStackProps) *IdentityStack {
	if !props.Env.Identity.Cognito {
		return nil
	}
	sp := props.StackProps
	out := &IdentityStack{Stack: awscdk.NewStack(scope, &id, &sp)}
	out.newPool(NewStage(props.Env), props.Env)
	awscdk.NewCfnOutput(out.Stack, jsii.String("IdentityIssuerUrl"), &awscdk.CfnOutputProps{Value: out.Pool.UserPoolProviderUrl()})
	awscdk.NewCfnOutput(out.Stack, jsii.String("IdentityClientId"), &awscdk.CfnOutputProps{Value: out.Client.UserPoolClientId()})
	awscdk.NewCfnOutput(out.Stack, jsii.String("IdentitySignInUrl"), &awscdk.CfnOutputProps{Value: out.Domain.BaseUrl(nil)})
	return out
}

// OutputIssuer outputs the external issuer the stage names, if any, as
// the identity stack outputs its pool's: on the application's stack,
// since a stack of outputs alone is no stack to CloudFormation.
func OutputIssuer(s awscdk.Stack, env EnvConfig) {
	if env.Identity.Issuer == "" {
		return
	}
	awscdk.NewCfnOutput(s, jsii.String("IdentityIssuerUrl"), &awscdk.CfnOutputProps{Value: jsii.String(env.Identity.Issuer)})
	awscdk.NewCfnOutput(s, jsii.String("IdentityClientId"), &awscdk.CfnOutputProps{Value: jsii.String(env.Identity.ClientID)})
}

// newPool makes the pool, its admins group, its hosted domain and the
// app's client. The client is public (a browser holds nothing secret)
// and takes the authorization-code flow alone: no implicit flow (a
// token in a URL), no client credentials, no password sent to an API;
// Cognito requires PKCE of a public client's code flow when the request
// carries a challenge, and the app always sends one.
func (i *IdentityStack) newPool(stage Stage, env EnvConfig) {
	i.Pool = awscognito.NewUserPool(i.Stack, jsii.String("UserPool"), &awscognito.UserPoolProps{
		UserPoolName: jsii.String(stage.Names.Prefix() + "-users"), SelfSignUpEnabled: jsii.Bool(false),
		SignInAliases: &awscognito.SignInAliases{Email: jsii.Bool(true)}, AccountRecovery: awscognito.AccountRecovery_EMAIL_ONLY,
		Mfa: awscognito.Mfa_OPTIONAL, MfaSecondFactor: &awscognito.MfaSecondFactor{Otp: jsii.Bool(true), Sms: jsii.Bool(false)},
		DeletionProtection: jsii.Bool(env.Retain), RemovalPolicy: stage.Removal,
	})
	awscognito.NewCfnUserPoolGroup(i.Stack, jsii.String("Admins"), &awscognito.CfnUserPoolGroupProps{
		UserPoolId: i.Pool.UserPoolId(), GroupName: jsii.String(CognitoAdminGroup),
		Description: jsii.String("Conclave admins: the cognito:groups claim a team registers as admin_claim"),
	})
	prefix := env.Identity.DomainPrefix
	if prefix == "" {
		prefix = stage.Names.Prefix() + "-" + *awscdk.Aws_ACCOUNT_ID()
	}
	i.Domain = i.Pool.AddDomain(jsii.String("Domain"), &awscognito.UserPoolDomainOptions{
		CognitoDomain: &awscognito.CognitoDomainOptions{DomainPrefix: jsii.String(prefix)},
	})
	i.Client = i.Pool.AddClient(jsii.String("App"), &awscognito.UserPoolClientOptions{
		GenerateSecret: jsii.Bool(false), PreventUserExistenceErrors: jsii.Bool(true),
		SupportedIdentityProviders: &[]awscognito.UserPoolClientIdentityProvider{awscognito.UserPoolClientIdentityProvider_COGNITO()},
		OAuth: &awscognito.OAuthSettings{
			Flows:        &awscognito.OAuthFlows{AuthorizationCodeGrant: jsii.Bool(true), ImplicitCodeGrant: jsii.Bool(false), ClientCredentials: jsii.Bool(false)},
			Scopes:       &[]awscognito.OAuthScope{awscognito.OAuthScope_OPENID(), awscognito.OAuthScope_EMAIL(), awscognito.OAuthScope_PROFILE()},
			CallbackUrls: jsii.Strings(env.Identity.CallbackURLs...),
		},
		IdTokenValidity: awscdk.Duration_Hours(jsii.Number(1)), AccessTokenValidity: awscdk.Duration_Hours(jsii.Number(1)),
		RefreshTokenValidity: awscdk.Duration_Days(jsii.Number(30)),
	})
	// Only refreshing is an API flow: signing in is the hosted page's
	// code flow. The CDK adds no flow list when none is asked for, and
	// Cognito then allows SRP and custom auth by default.
	cfn := i.Client.Node().DefaultChild().(awscognito.CfnUserPoolClient)
	cfn.AddPropertyOverride(jsii.String("ExplicitAuthFlows"), []string{"ALLOW_REFRESH_TOKEN_AUTH"})
}
