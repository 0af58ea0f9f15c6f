// Package aws is the wing of the AWS adapters that serve every domain
// alike: the EventBridge bus (eventbus), Step Functions executions
// (executions) and the consumers' dead-letter sender (queues). The
// adapters of one domain live beside it (the model adapters in models/,
// the DynamoDB stores in store/). It imports only platform.
package aws
