-- lyra_crawl/backends/tables.py at commit 06714fd (schema version 9, the first of the one history): a new store's tables and indexes as that release compiled them for sqlite, whole (no later version's delta).
CREATE TABLE IF NOT EXISTS batches (
	id INTEGER NOT NULL,
	source TEXT NOT NULL,
	content_hash TEXT NOT NULL,
	created_at TEXT NOT NULL,
	PRIMARY KEY (id)
);
CREATE TABLE IF NOT EXISTS engine_health (
	engine TEXT NOT NULL,
	state TEXT DEFAULT 'closed' NOT NULL,
	open_until REAL,
	consecutive_failures INTEGER DEFAULT 0 NOT NULL,
	trips INTEGER DEFAULT 0 NOT NULL,
	last_reason TEXT,
	trial_owner TEXT,
	updated_at TEXT NOT NULL,
	PRIMARY KEY (engine)
);
CREATE TABLE IF NOT EXISTS engine_rate (
	engine TEXT NOT NULL,
	next_allowed REAL NOT NULL,
	held INTEGER DEFAULT 0 NOT NULL,
	PRIMARY KEY (engine)
);
CREATE TABLE IF NOT EXISTS engine_rate_waiters (
	engine TEXT NOT NULL,
	address BLOB NOT NULL,
	PRIMARY KEY (engine, address)
)
 WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS engine_usage (
	engine TEXT NOT NULL,
	date TEXT NOT NULL,
	usage_count INTEGER DEFAULT 0 NOT NULL,
	UNIQUE (engine, date)
);
CREATE TABLE IF NOT EXISTS paper_index_generation (
	id INTEGER NOT NULL CHECK (id = 1),
	generation INTEGER NOT NULL,
	PRIMARY KEY (id)
);
CREATE TABLE IF NOT EXISTS paper_words (
	word TEXT NOT NULL,
	kind TEXT NOT NULL,
	PRIMARY KEY (word, kind)
)
 WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS papers (
	id INTEGER NOT NULL,
	doi TEXT,
	arxiv_id TEXT,
	pmid TEXT,
	title TEXT NOT NULL,
	normalized_title TEXT NOT NULL,
	match_records TEXT,
	match_titles TEXT,
	year INTEGER,
	authors TEXT,
	venue TEXT,
	abstract TEXT,
	external_ids TEXT,
	attribution TEXT,
	sources TEXT,
	fetch_urls TEXT,
	evidence TEXT,
	fetch_url TEXT,
	evidence_reason TEXT,
	created_at TEXT NOT NULL,
	updated_at TEXT NOT NULL,
	PRIMARY KEY (id),
	UNIQUE (doi)
);
CREATE TABLE IF NOT EXISTS queries (
	id INTEGER NOT NULL,
	query_text TEXT NOT NULL,
	normalized_query TEXT NOT NULL,
	task_id TEXT,
	engine TEXT NOT NULL,
	sources TEXT DEFAULT 'serp' NOT NULL,
	time_range TEXT,
	region TEXT,
	serp_page INTEGER DEFAULT 1 NOT NULL,
	serp_max_pages INTEGER NOT NULL,
	strategy TEXT NOT NULL,
	status TEXT DEFAULT 'running' NOT NULL,
	stop_reason TEXT,
	pages_fetched INTEGER DEFAULT 0 NOT NULL,
	items INTEGER DEFAULT 0 NOT NULL,
	harvest_rate REAL,
	selection TEXT,
	errors TEXT,
	attribution TEXT,
	cache_hit INTEGER DEFAULT 0 NOT NULL,
	cached_from INTEGER,
	job_id TEXT,
	batch_entry_id INTEGER,
	host TEXT,
	pid INTEGER,
	started_at TEXT NOT NULL,
	finished_at TEXT,
	PRIMARY KEY (id)
);
CREATE TABLE IF NOT EXISTS schema_version (
	version INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS batch_entries (
	id INTEGER NOT NULL,
	batch_id INTEGER NOT NULL,
	position INTEGER NOT NULL,
	query_text TEXT NOT NULL,
	arguments TEXT NOT NULL,
	state TEXT NOT NULL,
	attempts INTEGER DEFAULT 0 NOT NULL,
	query_id INTEGER,
	engine TEXT,
	detail TEXT DEFAULT '' NOT NULL,
	lease_owner TEXT,
	lease_until REAL,
	started_at TEXT,
	finished_at TEXT,
	PRIMARY KEY (id),
	UNIQUE (batch_id, position),
	FOREIGN KEY(batch_id) REFERENCES batches (id),
	FOREIGN KEY(query_id) REFERENCES queries (id)
);
CREATE TABLE IF NOT EXISTS batch_rate_waits (
	batch_id INTEGER NOT NULL,
	owner TEXT NOT NULL,
	engine TEXT NOT NULL,
	waits INTEGER NOT NULL,
	PRIMARY KEY (batch_id, owner, engine),
	FOREIGN KEY(batch_id) REFERENCES batches (id)
);
CREATE TABLE IF NOT EXISTS citation_fetches (
	query_id INTEGER NOT NULL,
	paper_id INTEGER NOT NULL,
	source TEXT NOT NULL,
	relation TEXT NOT NULL,
	level INTEGER NOT NULL,
	status TEXT NOT NULL,
	links INTEGER DEFAULT 0 NOT NULL,
	detail TEXT DEFAULT '' NOT NULL,
	fetched_at TEXT NOT NULL,
	PRIMARY KEY (query_id, paper_id, source, relation),
	FOREIGN KEY(query_id) REFERENCES queries (id),
	FOREIGN KEY(paper_id) REFERENCES papers (id)
);
CREATE TABLE IF NOT EXISTS citations (
	citing_paper_id INTEGER NOT NULL,
	cited_paper_id INTEGER NOT NULL,
	source TEXT NOT NULL,
	fetched_at TEXT NOT NULL,
	UNIQUE (citing_paper_id, cited_paper_id, source),
	FOREIGN KEY(citing_paper_id) REFERENCES papers (id),
	FOREIGN KEY(cited_paper_id) REFERENCES papers (id)
);
CREATE TABLE IF NOT EXISTS intervention_queue (
	id INTEGER NOT NULL,
	engine TEXT NOT NULL,
	url TEXT NOT NULL,
	query_id INTEGER,
	kind TEXT NOT NULL,
	detail TEXT,
	status TEXT DEFAULT 'open' NOT NULL,
	created_at TEXT NOT NULL,
	resolved_at TEXT,
	PRIMARY KEY (id),
	FOREIGN KEY(query_id) REFERENCES queries (id)
);
CREATE TABLE IF NOT EXISTS landing_pages (
	paper_id INTEGER NOT NULL,
	url TEXT NOT NULL,
	outcome TEXT NOT NULL,
	detail TEXT DEFAULT '' NOT NULL,
	http_status INTEGER,
	metadata_field TEXT,
	attempts INTEGER DEFAULT 1 NOT NULL,
	fetched_at TEXT NOT NULL,
	PRIMARY KEY (paper_id, url),
	FOREIGN KEY(paper_id) REFERENCES papers (id)
);
CREATE TABLE IF NOT EXISTS paper_index_blocks (
	block_hash INTEGER NOT NULL,
	paper_id INTEGER NOT NULL,
	PRIMARY KEY (block_hash, paper_id),
	FOREIGN KEY(paper_id) REFERENCES papers (id)
)
 WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS serp_cache (
	cache_key TEXT NOT NULL,
	query_id INTEGER NOT NULL,
	created_at TEXT NOT NULL,
	expires_at TEXT NOT NULL,
	PRIMARY KEY (cache_key),
	FOREIGN KEY(query_id) REFERENCES queries (id)
);
CREATE TABLE IF NOT EXISTS serp_items (
	id INTEGER NOT NULL,
	query_id INTEGER NOT NULL,
	source TEXT NOT NULL,
	engine TEXT NOT NULL,
	kind TEXT DEFAULT 'serp' NOT NULL,
	rank INTEGER NOT NULL,
	page_number INTEGER NOT NULL,
	position INTEGER,
	url TEXT NOT NULL,
	normalized_url TEXT NOT NULL,
	title TEXT NOT NULL,
	snippet TEXT,
	date TEXT,
	doi TEXT,
	arxiv_id TEXT,
	pmid TEXT,
	authors TEXT,
	year INTEGER,
	venue TEXT,
	abstract TEXT,
	source_id TEXT,
	pdf_url TEXT,
	relevance REAL,
	fused_rank INTEGER,
	paper_id INTEGER,
	fetched_at TEXT NOT NULL,
	PRIMARY KEY (id),
	UNIQUE (query_id, normalized_url),
	FOREIGN KEY(query_id) REFERENCES queries (id),
	FOREIGN KEY(paper_id) REFERENCES papers (id)
);
CREATE TABLE IF NOT EXISTS serp_pages (
	id INTEGER NOT NULL,
	query_id INTEGER NOT NULL,
	source TEXT NOT NULL,
	page_number INTEGER NOT NULL,
	outcome TEXT NOT NULL,
	results INTEGER NOT NULL,
	items_stored INTEGER NOT NULL,
	novelty_rate REAL,
	harvest_rate REAL,
	url TEXT,
	fetched_at TEXT NOT NULL,
	PRIMARY KEY (id),
	UNIQUE (query_id, source, page_number),
	FOREIGN KEY(query_id) REFERENCES queries (id)
);
CREATE INDEX IF NOT EXISTS batches_hash ON batches (content_hash);
CREATE INDEX IF NOT EXISTS papers_pmid ON papers (pmid);
CREATE INDEX IF NOT EXISTS papers_arxiv ON papers (arxiv_id);
CREATE INDEX IF NOT EXISTS queries_task ON queries (task_id);
CREATE INDEX IF NOT EXISTS queries_batch_entry ON queries (batch_entry_id);
CREATE INDEX IF NOT EXISTS queries_normalized ON queries (normalized_query);
CREATE INDEX IF NOT EXISTS queries_running ON queries (host) WHERE status = 'running';
CREATE INDEX IF NOT EXISTS batch_entries_state ON batch_entries (batch_id, state, position);
CREATE INDEX IF NOT EXISTS citation_fetches_paper ON citation_fetches (paper_id);
CREATE INDEX IF NOT EXISTS citations_cited ON citations (cited_paper_id);
CREATE INDEX IF NOT EXISTS intervention_queue_query ON intervention_queue (query_id);
CREATE INDEX IF NOT EXISTS paper_index_blocks_paper ON paper_index_blocks (paper_id);
CREATE INDEX IF NOT EXISTS serp_items_normalized_url ON serp_items (normalized_url);
CREATE INDEX IF NOT EXISTS serp_items_paper ON serp_items (paper_id);
CREATE INDEX IF NOT EXISTS serp_items_doi ON serp_items (doi);
