package dynamo

// MaxTransactItems is DynamoDB's limit of writes in one transaction.
const MaxTransactItems = 100
