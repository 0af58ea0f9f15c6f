package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/conclave-ai/conclave/shared/platform/manifest"
)

// TableProps configure the single table.
type TableProps struct {
	Stage Stage
	// DeletionProtection refuses a table delete (prod): the removal policy
	// covers the stack, this covers everything else.
	DeletionProtection bool
}

// Table is the single DynamoDB table of manifest.MainTable: on demand,
// point-in-time recovery, TTL, every GSI the access patterns need.
type Table struct {
	constructs.Construct
	// Table is the table itself, for grants and its name.
	Table awsdynamodb.Table
}

// NewTable creates the table.
func NewTable(scope constructs.Construct, id string, props *TableProps) *Table {
	c := constructs.NewConstruct(scope, &id)
	t := manifest.MainTable
	table := awsdynamodb.NewTable(c, jsii.String("Table"), &awsdynamodb.TableProps{
		TableName:                        jsii.String(props.Stage.Names.Table()),
		PartitionKey:                     &awsdynamodb.Attribute{Name: jsii.String(t.PartitionKey), Type: awsdynamodb.AttributeType_STRING},
		SortKey:                          &awsdynamodb.Attribute{Name: jsii.String(t.SortKey), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:                      awsdynamodb.BillingMode_PAY_PER_REQUEST,
		TimeToLiveAttribute:              jsii.String(t.TTLAttribute),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: jsii.Bool(true)},
		Encryption:                       awsdynamodb.TableEncryption_AWS_MANAGED,
		DeletionProtection:               jsii.Bool(props.DeletionProtection),
		RemovalPolicy:                    props.Stage.Removal,
	})
	for _, g := range t.GSIs {
		table.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
			IndexName:      jsii.String(g.Name),
			PartitionKey:   &awsdynamodb.Attribute{Name: jsii.String(g.PartitionKey), Type: awsdynamodb.AttributeType_STRING},
			SortKey:        &awsdynamodb.Attribute{Name: jsii.String(g.SortKey), Type: awsdynamodb.AttributeType_STRING},
			ProjectionType: awsdynamodb.ProjectionType_ALL,
		})
	}
	return &Table{Construct: c, Table: table}
}
