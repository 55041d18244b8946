/*
 * leaky.c: the demo program: a toy request server with real churn and a
 * real leak. Each "request" parses a line into a temporary token array
 * (churn: freed at once), builds a response buffer (churn), and records the
 * request in a session cache that is never evicted (the leak). Every 100th
 * request also grows a history log with realloc.
 *
 * Under `heapprof run`, the in-use profile points at session_remember
 * (the leak) and the allocation profile at tokenize and render (the churn).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct session {
	char *user;
	char *payload;
	struct session *next;
};

static struct session *sessions; /* grows forever: the leak */
static char *history;
static size_t history_len;

static char **
tokenize(const char *line, int *n)
{
	char **tok = malloc(64 * sizeof(*tok));
	char *copy = strdup(line);
	*n = 0;
	for (char *s = strtok(copy, " "); s && *n < 63; s = strtok(NULL, " "))
		tok[(*n)++] = strdup(s);
	free(copy);
	return tok;
}

static char *
render(char **tok, int n)
{
	size_t len = 1;
	for (int i = 0; i < n; i++)
		len += strlen(tok[i]) + 16;
	char *out = malloc(len * 8);
	out[0] = 0;
	for (int i = 0; i < n; i++) {
		strcat(out, "<td>");
		strcat(out, tok[i]);
		strcat(out, "</td>");
	}
	return out;
}

static void
session_remember(const char *user, const char *body)
{
	struct session *s = malloc(sizeof(*s));
	s->user = strdup(user);
	s->payload = malloc(2048); /* a cached copy nobody ever frees */
	snprintf(s->payload, 2048, "%s", body);
	s->next = sessions;
	sessions = s;
}

static void
log_request(const char *line)
{
	size_t n = strlen(line);
	history = realloc(history, history_len + n + 1);
	memcpy(history + history_len, line, n + 1);
	history_len += n;
}

static void
handle(int i)
{
	char line[256];
	snprintf(line, sizeof(line), "GET /item/%d user%d alpha beta gamma delta %d",
	         i, i % 977, i * 7);
	int n;
	char **tok = tokenize(line, &n);
	char *page = render(tok, n);
	session_remember(tok[2], page);
	if (i % 100 == 0)
		log_request(line);
	for (int k = 0; k < n; k++)
		free(tok[k]);
	free(tok);
	free(page);
}

int
main(int argc, char **argv)
{
	int requests = argc > 1 ? atoi(argv[1]) : 200000;
	for (int i = 0; i < requests; i++)
		handle(i);
	size_t count = 0;
	for (struct session *s = sessions; s; s = s->next)
		count++;
	printf("served %d requests, %zu sessions cached, %zu bytes of history\n",
	       requests, count, history_len);
	return 0;
}
