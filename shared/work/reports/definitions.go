package reports

// definitions are the eight templates. Every section's schema says what a
// format json report holds in it; markdown and bullet_points reports hold
// text under the same section names.
var definitions = []definition{
	{
		typ: "code_review", taskType: "review", complexity: Complex,
		description: "A review of code: what it does well and badly, each finding with its severity, and what to change.",
		required: []section{
			{"summary", text()},
			{"findings", records(record(map[string]any{"title": text(), "severity": severity, "location": text(), "detail": text()}, "title", "severity"))},
			{"severity_breakdown", record(map[string]any{"critical": count(), "high": count(), "medium": count(), "low": count(), "info": count()}, "critical", "high", "medium", "low")},
			{"recommendations", list(1)},
		},
		optional: []section{{"test_coverage", text()}, {"performance_notes", text()}, {"security_notes", text()}},
		params: []Param{
			strs("files", "the files or directories to review", true),
			strs("focus", "what to look at first (security, performance, readability, …)", false),
			str("language", "the programming language", false),
			str("context", "what the code is for", false),
		},
	},
	{
		typ: "security_audit", taskType: "review", complexity: Complex,
		description: "A security audit of a system: its scope, the vulnerabilities found with their severity, and how to remediate them.",
		required: []section{
			{"executive_summary", text()},
			{"scope", list(1)},
			{"vulnerabilities", records(record(map[string]any{"title": text(), "severity": severity, "cwe": text(), "affected": text(), "description": text()}, "title", "severity"))},
			{"remediation", records(record(map[string]any{"action": text(), "priority": enum("immediate", "short_term", "long_term"), "addresses": text()}, "action", "priority"))},
		},
		optional: []section{{"threat_model", text()}, {"attack_surface", list(1)}, {"compliance_notes", text()}},
		params: []Param{
			strs("scope", "the systems, services or code paths in scope", true),
			str("threat_model", "the attackers and assets to consider", false),
			strs("compliance", "standards to check against (OWASP ASVS, PCI DSS, SOC 2, …)", false),
			strs("focus", "areas to look at first", false),
		},
	},
	{
		typ: "research_summary", taskType: "analyze", complexity: Standard,
		description: "A summary of research on a topic: the findings, where they come from, and what to do about them.",
		required: []section{
			{"executive_summary", text()},
			{"findings", list(1)},
			{"sources", records(record(map[string]any{"title": text(), "url": text(), "note": text()}, "title"))},
			{"recommendations", list(1)},
		},
		optional: []section{{"methodology", text()}, {"limitations", text()}, {"next_steps", list(1)}},
		params: []Param{
			str("topic", "what to research", true),
			depth,
			strs("sources", "sources to start from", false),
			str("audience", "who will read it", false),
		},
	},
	{
		typ: "data_analysis", taskType: "analyze", complexity: Complex,
		description: "An analysis of a data set: what the data is, how it was analysed, what it shows and what follows.",
		required: []section{
			{"summary", text()},
			{"data_overview", text()},
			{"methodology", text()},
			{"findings", records(record(map[string]any{"statement": text(), "evidence": text(), "confidence": level}, "statement"))},
			{"conclusions", list(1)},
		},
		optional: []section{{"data_quality", text()}, {"limitations", text()}, {"next_steps", list(1)}},
		params: []Param{
			str("dataset", "the data, or where it is and what it holds", true),
			str("question", "what the analysis must answer", true),
			strs("metrics", "the measures to compute", false),
			str("period", "the time range", false),
		},
	},
	{
		typ: "risk_assessment", taskType: "analyze", complexity: Complex,
		description: "An assessment of the risks of a plan or system: each risk rated, its mitigation, and the risk that remains.",
		required: []section{
			{"risk_matrix", records(record(map[string]any{"risk": text(), "likelihood": level, "impact": level}, "risk", "likelihood", "impact"))},
			{"identified_risks", records(record(map[string]any{"risk": text(), "category": text(), "description": text()}, "risk", "description"))},
			{"mitigations", records(record(map[string]any{"risk": text(), "mitigation": text(), "owner": text()}, "risk", "mitigation"))},
			{"residual_risk", record(map[string]any{"level": level, "rationale": text()}, "level", "rationale")},
		},
		optional: []section{{"probability_analysis", text()}, {"impact_analysis", text()}, {"historical_context", text()}},
		params: []Param{
			str("subject", "the plan, change or system to assess", true),
			strs("risk_categories", "kinds of risk to cover (security, operational, financial, …)", false),
			str("horizon", "the time frame", false),
			str("risk_appetite", "how much risk is acceptable", false),
		},
	},
	{
		typ: "performance_report", taskType: "analyze", complexity: Standard,
		description: "A report on a system's performance: the measures, the bottlenecks and what to improve.",
		required: []section{
			{"summary", text()},
			{"metrics", records(record(map[string]any{"name": text(), "value": map[string]any{"type": "number"}, "unit": text(), "target": map[string]any{"type": "number"}}, "name", "value"))},
			{"bottlenecks", list(1)},
			{"recommendations", list(1)},
		},
		optional: []section{{"baseline_comparison", text()}, {"resource_utilization", text()}, {"trends", text()}},
		params: []Param{
			str("system", "the system, service or endpoint", true),
			strs("metrics", "the measures to report (latency p99, throughput, error rate, …)", false),
			str("period", "the time range", false),
			str("baseline", "what to compare with", false),
			depth,
		},
	},
	{
		// A comparison matrix is a table: bullet points cannot carry it.
		typ: "comparison", taskType: "analyze", complexity: Standard, formats: []string{Markdown, JSON},
		description: "A comparison of options against criteria: a matrix of how each option fares, and which to choose.",
		required: []section{
			{"options", list(2)},
			{"criteria", list(1)},
			{"comparison_matrix", records(record(map[string]any{"option": text(), "criterion": text(), "assessment": text(), "score": map[string]any{"type": "number", "minimum": 0, "maximum": 10}}, "option", "criterion", "assessment"))},
			{"recommendation", record(map[string]any{"choice": text(), "rationale": text()}, "choice", "rationale")},
		},
		optional: []section{{"tradeoffs", text()}, {"scoring_method", text()}, {"risks", list(1)}},
		params: []Param{
			{Name: "options", Kind: "list", Required: true, MinItems: 2, Description: "the options to compare (at least two)"},
			strs("criteria", "what to compare them on", true),
			str("context", "the decision the comparison informs", false),
			obj("weights", "criterion → weight"),
			depth,
		},
	},
	{
		typ: "action_plan", taskType: "analyze", complexity: Standard,
		description: "A plan to reach a goal: the actions with their owners, a timeline and how success is measured.",
		required: []section{
			{"objective", text()},
			{"actions", records(record(map[string]any{"action": text(), "owner": text(), "due": text()}, "action"))},
			{"timeline", records(record(map[string]any{"phase": text(), "when": text()}, "phase", "when"))},
			{"success_metrics", list(1)},
		},
		optional: []section{{"dependencies", list(1)}, {"risks", list(1)}, {"resources", text()}},
		params: []Param{
			str("goal", "what the plan must achieve", true),
			strs("constraints", "limits the plan must respect", false),
			str("deadline", "when it must be done", false),
			strs("owners", "people or agents who can own actions", false),
		},
	},
}
