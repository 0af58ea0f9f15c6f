package secretstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/stretchr/testify/assert"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/tools/secretstore"
)

// getter answers GetSecretValue with err (error mapping only).
type getter struct {
	secretstore.API
	err error
}

func (g getter) GetSecretValue(context.Context, *secretsmanager.GetSecretValueInput, ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	if g.err != nil {
		return nil, g.err
	}
	return &secretsmanager.GetSecretValueOutput{SecretString: aws.String("v")}, nil
}

// A secret that is gone, or deleted with a recovery window (Secrets
// Manager then refuses reads as an invalid request), is not found; any
// other failure is a server fault.
func TestGetSecretMapsMissingAndScheduledForDeletionToNotFound(t *testing.T) {
	for name, c := range map[string]struct {
		err  error
		code string
	}{
		"missing":               {&types.ResourceNotFoundException{Message: aws.String("no such secret")}, apperr.ENOTFOUND},
		"marked for deletion":   {&types.InvalidRequestException{Message: aws.String("You can't perform this operation on the secret because it was marked for deletion.")}, apperr.ENOTFOUND},
		"other invalid request": {&types.InvalidRequestException{Message: aws.String("something else")}, apperr.EINTERNAL},
		"throttled":             {errors.New("throttled"), apperr.EINTERNAL},
	} {
		_, err := (&secretstore.Store{API: getter{err: c.err}}).GetSecret(context.Background(), "conclave/dev/a2a/t/x/1")
		assert.Equal(t, c.code, apperr.Code(err), name)
	}
	v, err := (&secretstore.Store{API: getter{}}).GetSecret(context.Background(), "id")
	assert.NoError(t, err)
	assert.Equal(t, "v", v)
}
