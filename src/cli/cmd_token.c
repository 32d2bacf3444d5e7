/* cmd_token.c -- `baton token new NAME --role read|operate --file FILE`,
 * `baton token list --file FILE` and `baton token revoke NAME --file
 * FILE`: the bearer tokens of the HTTP control API (tokens.h owns the
 * file's format).
 *
 *   $ baton token new ops-bot --role operate --file /etc/baton/tokens
 *   bt_Zm9vYmFy...                    (stdout: the token, once)
 *   baton: token: ops-bot (operate) added to /etc/baton/tokens; the token is shown only now
 *   $ baton token list --file /etc/baton/tokens
 *   NAME     ROLE
 *   ops-bot  operate
 *
 * The file keeps the token's SHA-256 only: a lost token cannot be shown
 * again; revoke it and make a new one. A running supervisor reads the file
 * again on SIGHUP. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/crypto.h>

#include "cli.h"
#include "tokens.h"
#include "tools.h"

enum { OPT_ROLE = TOOL_OPT_COLOR + 1, OPT_FILE };

static int cmd_token(int argc, char **argv);

static const struct cli_opt opts[] = {
    {OPT_FILE, "file", "FILE",
     "the tokens file (http.tokens_file; `new` creates it, mode 0600, when absent)"},
    {OPT_ROLE, "role", "ROLE",
     "with new: read (GET only) or operate (also trigger, pause, resume, step down)"},
    TOOL_OPT_JSON_ROW("with list: print a JSON array of {\"name\", \"role\"}"),
    {0},
};

static const struct cli_exit exits[] = {
    {CLI_EXIT_OK, "the token was made (and printed), listed or revoked"},
    {CLI_EXIT_FAIL, "new: the name is taken, or the file cannot be written; revoke: no such "
                    "token, or the file cannot be replaced"},
    {CLI_EXIT_USAGE, "bad command line"},
    {CLI_EXIT_NOINPUT, "list: the file cannot be read"},
    {CLI_EXIT_CONFIG, "the file is malformed (file:line:col), or its mode is wider than 0640"},
    {-1, NULL},
};

const struct cli_cmd cli_cmd_token = {
    .name = "token",
    .operands = "new NAME --role ROLE | list | revoke NAME",
    .summary = "make, list and revoke the HTTP control API's tokens",
    .description =
        "Manages the bearer tokens of the HTTP control API (`http.control`, "
        "`http.tokens_file`). `new` makes a token of 256 random bits for NAME with ROLE, "
        "appends NAME, ROLE and the token's SHA-256 to FILE (creating it with mode 0600) and "
        "prints the token alone on stdout: it is shown this once and never stored. `list` "
        "prints the names and roles. `revoke` removes NAME. A running `baton run` reads the "
        "file again on SIGHUP.\n\n"
        "A client sends the token as `Authorization: Bearer TOKEN`. A `read` token may GET "
        "(/status, /metrics, /jobs/JOB/runs...); an `operate` token may also POST (trigger, "
        "pause, resume, step-down).",
    .opts = opts,
    .exits = exits,
    .operand = CLI_OPERAND_NONE,
    .run = cmd_token,
};

static int token_new(const char *file, const char *name, const char *role_name)
{
    enum token_role role;
    char token[TOKEN_TEXT_LEN + 1], err[600];
    if (role_name == NULL)
        return cli_usage("token", "new: --role read or --role operate is required");
    if (!token_role_parse(role_name, &role))
        return cli_usage("token", "--role \"%s\": read or operate", role_name);
    if (!token_name_ok(name))
        return cli_usage("token", "NAME \"%s\": 1-%d letters, digits, '_', '.', '@' or '-'", name,
                         TOKEN_NAME_MAX);
    if (tokens_add(file, name, role, token, sizeof token, err, sizeof err) != 0)
        return cli_fail("token", "%s", err);
    printf("%s\n", token);
    OPENSSL_cleanse(token, sizeof token);
    int rc = tool_flush("token");
    if (rc == 0)
        fprintf(stderr, "baton: token: %s (%s) added to %s; the token is shown only now\n", name,
                token_role_name(role), file);
    return rc;
}

static int token_list(const char *file, bool json)
{
    struct token_set set;
    char err[600];
    struct stat st;
    if (tokens_load(file, &set, err, sizeof err) != 0)
        return cli_error(stat(file, &st) != 0 ? CLI_EXIT_NOINPUT : CLI_EXIT_CONFIG, "token", "%s",
                         err);
    int rc;
    if (json) {
        cJSON *a = cJSON_CreateArray();
        for (size_t i = 0; a != NULL && i < set.n; i++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "name", set.v[i].name);
            cJSON_AddStringToObject(o, "role", token_role_name(set.v[i].role));
            cJSON_AddItemToArray(a, o);
        }
        rc = tool_print_json("token", a);
    } else {
        struct tool_table t;
        tool_table_init(&t, 2);
        tool_table_add(&t, (const char *const[]){"NAME", "ROLE"});
        for (size_t i = 0; i < set.n; i++)
            tool_table_add(&t,
                           (const char *const[]){set.v[i].name, token_role_name(set.v[i].role)});
        tool_table_print(&t, "", stdout);
        tool_table_free(&t);
        rc = tool_flush("token");
    }
    tokens_free(&set);
    return rc;
}

static int cmd_token(int argc, char **argv)
{
    const char *file = NULL, *role = NULL;
    bool json = false;
    struct cli_parse p;
    int opt;
    cli_parse_init(&p, &cli_cmd_token, argc, argv);
    while ((opt = cli_parse_next(&p)) >= 0) {
        switch (opt) {
        case OPT_FILE: file = p.arg; break;
        case OPT_ROLE: role = p.arg; break;
        case TOOL_OPT_JSON: json = true; break;
        default: break;
        }
    }
    int optind = p.optind, status = p.status;
    cli_parse_end(&p);
    if (opt == CLI_OPT_EXIT)
        return status;
    if (optind >= argc)
        return cli_usage("token", "missing new, list or revoke");
    const char *verb = argv[optind];
    bool named = strcmp(verb, "new") == 0 || strcmp(verb, "revoke") == 0;
    if (!named && strcmp(verb, "list") != 0)
        return cli_usage("token", "\"%s\": new, list or revoke", verb);
    if (named && optind + 1 >= argc)
        return cli_usage("token", "%s: missing NAME", verb);
    int nargs = named ? 2 : 1;
    if (optind + nargs < argc)
        return cli_usage("token", "unexpected argument \"%s\"", argv[optind + nargs]);
    if (file == NULL || file[0] == '\0')
        return cli_usage("token", "--file FILE is required");
    if (role != NULL && strcmp(verb, "new") != 0)
        return cli_usage("token", "--role goes with new");
    if (json && strcmp(verb, "list") != 0)
        return cli_usage("token", "--json goes with list");
    if (strcmp(verb, "new") == 0)
        return token_new(file, argv[optind + 1], role);
    if (strcmp(verb, "list") == 0)
        return token_list(file, json);
    char err[600];
    if (tokens_revoke(file, argv[optind + 1], err, sizeof err) != 0)
        return cli_fail("token", "%s", err);
    fprintf(stderr, "baton: token: %s revoked in %s (a running baton run forgets it on SIGHUP)\n",
            argv[optind + 1], file);
    return CLI_EXIT_OK;
}
