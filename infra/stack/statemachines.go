package stack

import (
	"fmt"
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/statemachines"
)

// StateMachinesProps configure the state machines and the resources their
// definitions reference.
type StateMachinesProps struct {
	Stage     Stage
	Table     awsdynamodb.ITable
	Bus       awsevents.IEventBus
	Functions map[string]awslambda.Function
	Queues    map[string]awssqs.Queue
}

// StateMachines are the manifest's Standard state machines, deployed from
// the ASL files in statemachines/ as they are, with definition
// substitutions for the ARNs and URLs they need and a grant for each.
type StateMachines struct {
	constructs.Construct
	// Machines by manifest name.
	Machines map[string]awsstepfunctions.StateMachine
	// arns are the machines' ARNs built from their names, and
	// executionARNs the ARNs of their executions, in manifest order. A
	// reference to a machine would make a dependency cycle: the worker both
	// is invoked by the delegation machine and starts executions of it
	// (sub-delegation).
	arns          map[string]*string
	executionARNs []*string
}

// NewStateMachines creates every state machine of the manifest.
func NewStateMachines(scope constructs.Construct, id string, props *StateMachinesProps) *StateMachines {
	c := constructs.NewConstruct(scope, &id)
	m := &StateMachines{Construct: c, Machines: map[string]awsstepfunctions.StateMachine{}, arns: map[string]*string{}}
	stack := awscdk.Stack_Of(c)
	for _, sm := range manifest.StateMachines {
		m.Machines[sm.Name] = m.newMachine(sm, props)
		name := props.Stage.Names.StateMachine(sm.Name)
		m.arns[sm.Name] = stack.FormatArn(&awscdk.ArnComponents{
			Service: jsii.String("states"), Resource: jsii.String("stateMachine"),
			ResourceName: jsii.String(name), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME,
		})
		m.executionARNs = append(m.executionARNs, stack.FormatArn(&awscdk.ArnComponents{
			Service: jsii.String("states"), Resource: jsii.String("execution"),
			ResourceName: jsii.String(name + ":*"), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME,
		}))
	}
	return m
}

// newMachine creates sm with its log group. Substitutions are resolved
// before the machine is created (jsii copies the map), grants after (they
// need the machine's role). Both walk the keys sorted: the grants' order is
// the order of the role's policy statements.
func (m *StateMachines) newMachine(sm manifest.StateMachine, props *StateMachinesProps) awsstepfunctions.StateMachine {
	raw, err := statemachines.Definition(sm.File)
	if err != nil {
		panic(err)
	}
	id, name := camel(sm.Name), props.Stage.Names.StateMachine(sm.Name)
	logs := awslogs.NewLogGroup(m.Construct, jsii.String(id+"StateMachineLogs"), &awslogs.LogGroupProps{
		LogGroupName: jsii.String("/aws/vendedlogs/states/" + name), Retention: props.Stage.LogRetention, RemovalPolicy: props.Stage.Removal,
	})
	subs := map[string]*string{}
	for _, k := range sortedKeys(sm.Substitutions) {
		subs[k] = props.value(sm.Name, sm.Substitutions[k])
	}
	machine := awsstepfunctions.NewStateMachine(m.Construct, jsii.String(id+"StateMachine"), &awsstepfunctions.StateMachineProps{
		StateMachineName:        jsii.String(name),
		StateMachineType:        awsstepfunctions.StateMachineType_STANDARD,
		DefinitionBody:          awsstepfunctions.DefinitionBody_FromString(jsii.String(raw)),
		DefinitionSubstitutions: &subs,
		Logs:                    props.Stage.MachineLogs(logs),
		// No X-Ray of Step Functions' own: the functions' spans carry the
		// trace across the machine (the payloads' trace field), and a
		// second, unrelated trace of the execution would only mislead.
		TracingEnabled: jsii.Bool(false),
		Timeout:        awscdk.Duration_Seconds(jsii.Number(float64(sm.Timeout))),
	})
	actions, err := statemachines.Actions(raw)
	if err != nil {
		panic(fmt.Sprintf("state machine %s: %v", sm.Name, err))
	}
	for _, k := range sortedKeys(sm.Substitutions) {
		props.grant(sm.Substitutions[k], actions[k], machine)
	}
	return machine
}

// value resolves a manifest reference ("bus", "table", "function:<name>",
// "queue:<name>") to the name, ARN or URL a definition substitutes.
// manifest.Validate rejects unknown references; one here is a bug.
func (p *StateMachinesProps) value(machine, ref string) *string {
	r := mustRef(machine, ref)
	switch r.Kind {
	case manifest.RefBus:
		return p.Bus.EventBusName()
	case manifest.RefTable:
		return p.Table.TableName()
	case manifest.RefFunction:
		return p.Functions[r.Name].FunctionArn()
	default:
		return p.Queues[r.Name].QueueUrl()
	}
}

// grant gives machine the actions its definition's Task states perform
// on the resource a reference names (statemachines.Actions): invoke a
// function, send to a queue, act on the table or the bus. A reference no
// Task acts on gets nothing.
func (p *StateMachinesProps) grant(ref string, actions []string, machine awsstepfunctions.StateMachine) {
	if len(actions) == 0 {
		return
	}
	r := mustRef("", ref)
	switch r.Kind {
	case manifest.RefFunction:
		if len(actions) != 1 || actions[0] != manifest.ActionInvokeFunction {
			panic(fmt.Sprintf("function %s: a definition may only invoke it, not %v", r.Name, actions))
		}
		p.Functions[r.Name].GrantInvoke(machine)
	case manifest.RefBus:
		machine.AddToRolePolicy(statement(actions, p.Bus.EventBusArn()))
	case manifest.RefTable:
		machine.AddToRolePolicy(statement(actions, p.Table.TableArn()))
	case manifest.RefQueue:
		machine.AddToRolePolicy(statement(actions, p.Queues[r.Name].QueueArn()))
	}
}

func mustRef(machine, ref string) manifest.Ref {
	r, err := manifest.ParseRef(ref)
	if err != nil {
		panic(fmt.Sprintf("state machine %s: %v", machine, err))
	}
	return r
}

// ARNPairs is the STATE_MACHINE_ARNS value: name=ARN for every machine.
func (m *StateMachines) ARNPairs() *string { return joinPairs(m.arns) }

// GrantExecutions lets the functions whose manifest grants say so start or
// stop executions, telling them the machines' ARNs, and
// complete the task tokens of waiting states.
func (m *StateMachines) GrantExecutions(functions map[string]awslambda.Function) {
	var arns []*string
	for _, sm := range manifest.StateMachines {
		arns = append(arns, m.arns[sm.Name])
	}
	for _, f := range manifest.Functions {
		fn := functions[f.Name]
		if slices.Contains(f.Grants, manifest.GrantCallback) {
			// Task tokens of the machines' waiting states, on ARNs built from
			// names: the lifecycle function is invoked by the machine, so a
			// reference would be a dependency cycle.
			// The code only ever succeeds a token (a failed child is an
			// outcome the parent reads), so SendTaskFailure and
			// SendTaskHeartbeat are not granted.
			fn.AddToRolePolicy(statement([]string{string(manifest.GrantCallback)}, arns...))
		}
		starts, stops := slices.Contains(f.Grants, manifest.GrantStartExecution), slices.Contains(f.Grants, manifest.GrantStopExecution)
		if !starts && !stops {
			continue
		}
		fn.AddEnvironment(jsii.String(settings.EnvStateMachines), m.ARNPairs(), nil)
		if starts {
			fn.AddToRolePolicy(statement([]string{string(manifest.GrantStartExecution)}, arns...))
		}
		if stops {
			fn.AddToRolePolicy(statement([]string{string(manifest.GrantStopExecution)}, m.executionARNs...))
		}
		if slices.Contains(f.Grants, manifest.GrantDescribeExecution) {
			fn.AddToRolePolicy(statement([]string{string(manifest.GrantDescribeExecution)}, m.executionARNs...))
		}
	}
}
