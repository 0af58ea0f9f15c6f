// Package secretstore keeps credentials in AWS Secrets Manager
// (toolpacks.Secrets): the MCP packs' credentials, which the table never
// holds. Locally the local cloud serves Secrets Manager (moto).
package secretstore

import (
	"context"
	"errors"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
)

// API is the part of the Secrets Manager client the store uses.
type API interface {
	CreateSecret(ctx context.Context, in *secretsmanager.CreateSecretInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.CreateSecretOutput, error)
	PutSecretValue(ctx context.Context, in *secretsmanager.PutSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.PutSecretValueOutput, error)
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
	DeleteSecret(ctx context.Context, in *secretsmanager.DeleteSecretInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.DeleteSecretOutput, error)
}

// Store implements toolpacks.Secrets.
type Store struct{ API API }

var _ toolpacks.Secrets = (*Store)(nil)

// New returns the store on the Secrets Manager of cfg.
func New(cfg aws.Config) *Store { return &Store{API: secretsmanager.NewFromConfig(cfg)} }

// PutSecret implements toolpacks.Secrets: the secret created with value
// (one call for a new pack's credential), or, when it exists, a new
// value on it.
func (s *Store) PutSecret(ctx context.Context, id, value string) error {
	_, err := s.API.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: &id, SecretString: &value,
		Description: aws.String("Conclave: the credential of a team's MCP tool pack")})
	var exists *types.ResourceExistsException
	if !errors.As(err, &exists) {
		return internal(err, "CreateSecret")
	}
	_, err = s.API.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: &id, SecretString: &value})
	return internal(err, "PutSecretValue")
}

// GetSecret implements toolpacks.Secrets.
func (s *Store) GetSecret(ctx context.Context, id string) (string, error) {
	out, err := s.API.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: &id})
	var nf *types.ResourceNotFoundException
	var ir *types.InvalidRequestException
	switch {
	case errors.As(err, &nf):
		return "", apperr.NotFound("secret", id)
	case errors.As(err, &ir) && strings.Contains(ir.ErrorMessage(), "marked for deletion"):
		// Deleted in the console with a recovery window: as good as gone.
		return "", apperr.NotFound("secret", id)
	case err != nil:
		return "", internal(err, "GetSecretValue")
	}
	return aws.ToString(out.SecretString), nil
}

// DeleteSecret implements toolpacks.Secrets: at once, without the
// recovery window (a removed credential must stop working now).
func (s *Store) DeleteSecret(ctx context.Context, id string) error {
	_, err := s.API.DeleteSecret(ctx, &secretsmanager.DeleteSecretInput{SecretId: &id, ForceDeleteWithoutRecovery: aws.Bool(true)})
	var nf *types.ResourceNotFoundException
	if errors.As(err, &nf) {
		return nil
	}
	return internal(err, "DeleteSecret")
}

func internal(err error, op string) error {
	if err == nil {
		return nil
	}
	return apperr.Wrap(apperr.EINTERNAL, err, "secretsmanager %s", op)
}
