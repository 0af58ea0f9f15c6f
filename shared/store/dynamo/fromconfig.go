package dynamo

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// FromConfig is the store of table on a client built from cfg, as each
// function's builder makes it once per cold start.
func FromConfig(cfg aws.Config, table string) *Store {
	return New(dynamodb.NewFromConfig(cfg), table)
}
