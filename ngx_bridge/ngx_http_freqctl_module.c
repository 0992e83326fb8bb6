/*
 * ngx_http_freqctl_module: enforces freqctl's L7 policies and bans, which
 * `freqctl` publishes to a shared-memory file, in the PREACCESS phase.
 * Policies change without a reload: a worker notices a new seq in the shm on
 * its next request and rebuilds its private index (fc_l7.c). A missing or
 * unusable shm lets requests pass, logged once.
 *
 * Concurrency caps: a request's places are taken at its decision and given
 * back by a cleanup of the main request's pool, whichever way the request
 * ends (as limit_conn does). Each worker records the places it holds in the
 * state file, and returns those of workers that are gone when it starts and
 * at most once a second while it serves requests (no timer: a timer of the
 * module's own would make each request's timers dearer to file).
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <sys/mman.h>

#include "fc_l7.h"

#define NGX_HTTP_FREQCTL_RECHECK 1000 /* ms between stat() of the shm path and looks
                                          for the places of workers gone */
#define NGX_HTTP_FREQCTL_PLACES  2    /* places a request keeps without allocating */

/*
 * freqctl_uid $cookie_NAME, $arg_NAME or $http_NAME: the module reads every
 * copy of NAME itself, as an application behind nginx may read it (fc_l7.h:
 * names in any case, escaped, PHP's spellings; every Cookie line), where
 * nginx's variable takes the first copy, its name in any case; and whether
 * one copy is exact, under NAME as the directive writes it (what an allow
 * entry needs). Unless the configuration defines a variable of that name of
 * its own (set, map): that one is read, as nginx gives it.
 */
enum {
    NGX_HTTP_FREQCTL_ARG = 1,
    NGX_HTTP_FREQCTL_COOKIE,
    NGX_HTTP_FREQCTL_HEADER,
};

typedef struct {
    ngx_uint_t                 kind;     /* NGX_HTTP_FREQCTL_ARG, ...; 0: var is the
                                            configuration's own variable */
    ngx_str_t                  var;      /* the variable's name, lowercase */
    ngx_str_t                  name;     /* NAME as fc_l7.h matches it: canonical */
    u_char                    *raw;      /* NAME as the directive writes it (name.len
                                            bytes): its exact copy's name */
} ngx_http_freqctl_src_t;

typedef struct {
    ngx_str_t                  shm_path;    /* the config file, root's */
    ngx_str_t                  state_path;  /* the workers' state file beside it */
    ngx_flag_t                 key_used;    /* $freqctl_key is in the configuration */
    ngx_array_t                uid_srcs;    /* of ngx_http_freqctl_src_t *, checked at postconfiguration */
    ngx_int_t                  ctx_index;   /* $freqctl_internal_ctx: the request's ctx, see get_ctx() */
} ngx_http_freqctl_main_conf_t;

typedef struct {
    ngx_flag_t                 enable;
    ngx_http_complex_value_t  *uid;
    ngx_int_t                  uid_index;  /* freqctl_uid is one variable: read it directly */
    ngx_http_freqctl_src_t    *uid_src;    /* ... and it is $cookie_, $arg_ or $http_NAME */
    ngx_uint_t                 status;
    ngx_uint_t                 ban_status;
    ngx_flag_t                 dry_run;
    ngx_uint_t                 log_level;
    ngx_flag_t                 headers;
} ngx_http_freqctl_loc_conf_t;

typedef struct {
    ngx_uint_t                 status;  /* ngx_http_freqctl_statuses[] */
    uint32_t                   policy;
    ngx_str_t                  key;     /* the deciding per-key bucket's key */
    struct fc_l7_place        *places;  /* concurrency places held, to give back */
    size_t                     nplaces;
    ngx_uint_t                 state_gen;  /* of the state mapping they are in */
    unsigned                   done:1;
    /* Last: room the decision writes before it is read, not zeroed. */
    struct fc_l7_place         place[NGX_HTTP_FREQCTL_PLACES];
} ngx_http_freqctl_ctx_t;

/* $freqctl_key holds this much of a key at most. */
#define NGX_HTTP_FREQCTL_KEY_MAX  256
#define NGX_HTTP_FREQCTL_UID_LOG  512 /* bytes of a logged uid, its copies, escaped */

enum {
    NGX_HTTP_FREQCTL_NONE = 0,
    NGX_HTTP_FREQCTL_PASSED,
    NGX_HTTP_FREQCTL_DELAYED,
    NGX_HTTP_FREQCTL_REJECTED,
    NGX_HTTP_FREQCTL_BANNED,
    NGX_HTTP_FREQCTL_DELAYED_DRY_RUN,
    NGX_HTTP_FREQCTL_REJECTED_DRY_RUN,
    NGX_HTTP_FREQCTL_BANNED_DRY_RUN,
    NGX_HTTP_FREQCTL_ALLOWED,
};

static ngx_str_t  ngx_http_freqctl_statuses[] = {
    ngx_null_string,
    ngx_string("PASSED"),
    ngx_string("DELAYED"),
    ngx_string("REJECTED"),
    ngx_string("BANNED"),
    ngx_string("DELAYED_DRY_RUN"),
    ngx_string("REJECTED_DRY_RUN"),
    ngx_string("BANNED_DRY_RUN"),
    ngx_string("ALLOWED"),
};

/* One mapped file, and what it was when mapped. */
typedef struct {
    u_char                    *base;
    size_t                     size;
    dev_t                      dev;
    ino_t                      ino;
} ngx_http_freqctl_map_t;

/* This worker's view of the shm: the config file mapped read-only (root
 * writes it), the state file read-write (the workers write it), and the
 * worker's private index. */
typedef struct {
    ngx_http_freqctl_map_t     config;
    ngx_http_freqctl_map_t     state;
    ngx_uint_t                 state_gen;  /* bumped at each mapping of the state file */
    ngx_msec_t                 checked;
    ngx_pool_t                *pool;
    struct fc_l7_index         ix;
    unsigned                   valid:1;
    unsigned                   logged_missing:1;
    unsigned                   logged_holds:1;
    uint64_t                   logged_seq;  /* the seq last complained about */
    /* This worker's record of its concurrency places, in the state file. */
    uint64_t                   self;        /* its owner id: pid and start time */
    uint32_t                  *free;        /* FC_SHM_HOLDS: the record's free holds */
    struct fc_l7_holder        holder;
} ngx_http_freqctl_shm_t;

static ngx_http_freqctl_shm_t  ngx_http_freqctl_shm;

static ngx_int_t ngx_http_freqctl_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_freqctl_verdict(ngx_http_request_t *r,
    ngx_http_freqctl_loc_conf_t *lcf, ngx_http_freqctl_ctx_t *ctx,
    struct fc_l7_result *res, struct fc_l7_req *rq);
static ngx_int_t ngx_http_freqctl_wait(ngx_http_request_t *r,
    ngx_http_freqctl_loc_conf_t *lcf, ngx_http_freqctl_ctx_t *ctx,
    struct fc_l7_result *res, struct fc_l7_req *rq);
static char *ngx_http_freqctl_uid(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *ngx_http_freqctl_uid_src(ngx_conf_t *cf,
    ngx_http_freqctl_loc_conf_t *lcf, ngx_str_t *var);
static void ngx_http_freqctl_delay(ngx_http_request_t *r);
static ngx_int_t ngx_http_freqctl_add_variables(ngx_conf_t *cf);
static void *ngx_http_freqctl_create_main_conf(ngx_conf_t *cf);
static char *ngx_http_freqctl_init_main_conf(ngx_conf_t *cf, void *conf);
static void *ngx_http_freqctl_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_freqctl_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child);
static ngx_int_t ngx_http_freqctl_init(ngx_conf_t *cf);
static ngx_int_t ngx_http_freqctl_init_process(ngx_cycle_t *cycle);
static void ngx_http_freqctl_exit_process(ngx_cycle_t *cycle);
static uint64_t ngx_http_freqctl_now(void);

static ngx_conf_num_bounds_t  ngx_http_freqctl_status_bounds = {
    ngx_conf_check_num_bounds, 400, 599
};

static ngx_conf_enum_t  ngx_http_freqctl_log_levels[] = {
    { ngx_string("info"), NGX_LOG_INFO },
    { ngx_string("notice"), NGX_LOG_NOTICE },
    { ngx_string("warn"), NGX_LOG_WARN },
    { ngx_string("error"), NGX_LOG_ERR },
    { ngx_null_string, 0 }
};

static ngx_command_t  ngx_http_freqctl_commands[] = {

    { ngx_string("freqctl_shm"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_freqctl_main_conf_t, shm_path),
      NULL },

    { ngx_string("freqctl"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_freqctl_loc_conf_t, enable),
      NULL },

    { ngx_string("freqctl_uid"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_freqctl_uid,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_freqctl_loc_conf_t, uid),
      NULL },

    { ngx_string("freqctl_status"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_freqctl_loc_conf_t, status),
      &ngx_http_freqctl_status_bounds },

    { ngx_string("freqctl_ban_status"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_freqctl_loc_conf_t, ban_status),
      &ngx_http_freqctl_status_bounds },

    { ngx_string("freqctl_dry_run"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_freqctl_loc_conf_t, dry_run),
      NULL },

    { ngx_string("freqctl_log_level"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_enum_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_freqctl_loc_conf_t, log_level),
      &ngx_http_freqctl_log_levels },

    { ngx_string("freqctl_headers"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_freqctl_loc_conf_t, headers),
      NULL },

      ngx_null_command
};

static ngx_http_module_t  ngx_http_freqctl_module_ctx = {
    ngx_http_freqctl_add_variables,        /* preconfiguration */
    ngx_http_freqctl_init,                 /* postconfiguration */
    ngx_http_freqctl_create_main_conf,     /* create main configuration */
    ngx_http_freqctl_init_main_conf,       /* init main configuration */
    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */
    ngx_http_freqctl_create_loc_conf,      /* create location configuration */
    ngx_http_freqctl_merge_loc_conf        /* merge location configuration */
};

ngx_module_t  ngx_http_freqctl_module = {
    NGX_MODULE_V1,
    &ngx_http_freqctl_module_ctx,          /* module context */
    ngx_http_freqctl_commands,             /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    ngx_http_freqctl_init_process,         /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    ngx_http_freqctl_exit_process,         /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static void *
ngx_http_freqctl_pool_alloc(void *ctx, size_t size)
{
    return ngx_pcalloc(ctx, size);
}


/* The state file is left: the places this worker still records in it are
 * given back (requests that hold them find another mapping when they end,
 * and give back nothing), and its record is freed. */
static void
ngx_http_freqctl_state_leave(ngx_http_freqctl_shm_t *s)
{
    if (s->state.base && s->holder.rec) {
        fc_l7_holder_close(s->state.base, s->state.size, &s->holder,
                           ngx_http_freqctl_now());
    }
}


/* Gives back the places of workers that are gone, in the state file mapped. */
static void
ngx_http_freqctl_recover(ngx_http_freqctl_shm_t *s, ngx_log_t *log)
{
    size_t  n;

    n = fc_l7_recover(s->state.base, s->state.size, s->self,
                      ngx_http_freqctl_now(), NULL);
    if (n) {
        ngx_log_error(NGX_LOG_NOTICE, log, 0,
                      "freqctl: gave back %uz concurrency places of workers "
                      "that are gone", n);
    }
}


/* A state file newly mapped: a record of this worker's own in it, and the
 * places of workers that are gone given back. */
static void
ngx_http_freqctl_state_join(ngx_http_freqctl_shm_t *s, ngx_log_t *log)
{
    s->state_gen++;

    if (s->free == NULL || s->self == 0) {
        return;  /* not a worker (the cache manager, say) */
    }

    if (fc_l7_holder_open(s->state.base, s->state.size, s->self, s->free,
                          &s->holder) != 0)
    {
        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "freqctl: all %d worker records of the shm's state "
                      "are in use: the concurrency places of this worker "
                      "are not given back if it is killed", FC_SHM_WORKERS);
    }

    ngx_http_freqctl_recover(s, log);
}


static void
ngx_http_freqctl_unmap_file(ngx_http_freqctl_shm_t *s, ngx_http_freqctl_map_t *m)
{
    if (m->base) {
        if (m == &s->state) {
            ngx_http_freqctl_state_leave(s);
        }
        munmap(m->base, m->size);
        m->base = NULL;
    }
}


static void
ngx_http_freqctl_unmap(ngx_http_freqctl_shm_t *s)
{
    ngx_http_freqctl_unmap_file(s, &s->config);
    ngx_http_freqctl_unmap_file(s, &s->state);

    if (s->pool) {
        ngx_destroy_pool(s->pool);
        s->pool = NULL;
    }

    s->valid = 0;
}


/* (Re)maps path into m when it now names another file: root replaces the
 * files rather than resizing them, so the old mapping stays whole until
 * then. NGX_OK: the same file; NGX_DONE: newly mapped; NGX_DECLINED: there
 * is no such file. */
static ngx_int_t
ngx_http_freqctl_map_file(ngx_http_freqctl_shm_t *s, ngx_http_freqctl_map_t *m,
    ngx_str_t *path, ngx_uint_t writable, ngx_log_t *log)
{
    ngx_fd_t         fd;
    ngx_file_info_t  fi;
    u_char          *base;

    if (ngx_file_info(path->data, &fi) == NGX_FILE_ERROR) {
        ngx_http_freqctl_unmap_file(s, m);
        return NGX_DECLINED;
    }

    if (m->base && fi.st_dev == m->dev && ngx_file_uniq(&fi) == m->ino
        && (size_t) ngx_file_size(&fi) == m->size)
    {
        return NGX_OK;
    }

    ngx_http_freqctl_unmap_file(s, m);

    fd = ngx_open_file(path->data, writable ? NGX_FILE_RDWR : NGX_FILE_RDONLY,
                       NGX_FILE_OPEN, 0);
    if (fd == NGX_INVALID_FILE) {
        return NGX_ERROR;
    }

    base = NULL;
    if (ngx_file_size(&fi) > 0) {
        base = mmap(NULL, (size_t) ngx_file_size(&fi),
                    PROT_READ|(writable ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
    }

    ngx_close_file(fd);

    if (base == NULL || base == MAP_FAILED) {
        return NGX_ERROR;
    }

    m->base = base;
    m->size = (size_t) ngx_file_size(&fi);
    m->dev = fi.st_dev;
    m->ino = ngx_file_uniq(&fi);

    ngx_log_error(NGX_LOG_NOTICE, log, 0, "freqctl: mapped shm \"%V\"", path);

    if (m == &s->state) {
        ngx_http_freqctl_state_join(s, log);
    }

    return NGX_DONE;
}


/* Maps both files; without either, requests pass (logged once). The index
 * points into the mappings: a file mapped anew means an index built anew,
 * whatever its seq (a new file starts its own). */
static void
ngx_http_freqctl_map(ngx_http_freqctl_shm_t *s,
    ngx_http_freqctl_main_conf_t *mcf, ngx_log_t *log)
{
    ngx_int_t   rc, rc2;
    ngx_str_t  *path;

    path = &mcf->shm_path;
    rc = ngx_http_freqctl_map_file(s, &s->config, path, 0, log);

    if (rc == NGX_OK || rc == NGX_DONE) {
        path = &mcf->state_path;
        rc2 = ngx_http_freqctl_map_file(s, &s->state, path, 1, log);
        rc = rc2 == NGX_OK ? rc : rc2;
    }

    if (rc == NGX_DONE && s->pool) {
        ngx_destroy_pool(s->pool);
        s->pool = NULL;
        s->valid = 0;
        s->logged_seq = 0;
    }

    if (rc == NGX_OK || rc == NGX_DONE) {
        s->logged_missing = 0;
        return;
    }

    if (!s->logged_missing) {
        ngx_log_error(NGX_LOG_WARN, log, rc == NGX_ERROR ? ngx_errno : 0,
                      "freqctl: shm \"%V\" is %s: requests pass until it "
                      "is there", path,
                      rc == NGX_ERROR ? "not usable" : "missing");
        s->logged_missing = 1;
    }

    ngx_http_freqctl_unmap(s);
}


/* At most once a second, from a request: the files remapped if root
 * replaced them, and the places of workers that are gone given back (a
 * request that could need them comes here first). */
static void
ngx_http_freqctl_check(ngx_http_freqctl_shm_t *s,
    ngx_http_freqctl_main_conf_t *mcf, ngx_log_t *log)
{
    s->checked = ngx_current_msec;
    ngx_http_freqctl_map(s, mcf, log);

    if (s->state.base) {
        ngx_http_freqctl_recover(s, log);
    }
}


/* The index for this request: rebuilt when the shm's seq moved. */
static struct fc_l7_index *
ngx_http_freqctl_index(ngx_http_request_t *r, ngx_http_freqctl_main_conf_t *mcf)
{
    ngx_http_freqctl_shm_t  *s = &ngx_http_freqctl_shm;
    struct fc_shm_header    *h;
    struct fc_l7_alloc       a;
    struct fc_l7_index       ix;
    ngx_pool_t              *pool;
    ngx_int_t                rc, tries;
    uint64_t                 seq;

    if (s->config.base == NULL
        || ngx_current_msec - s->checked >= NGX_HTTP_FREQCTL_RECHECK)
    {
        ngx_http_freqctl_check(s, mcf, r->connection->log);
    }

    if (s->config.base == NULL || s->state.base == NULL
        || s->config.size < sizeof(struct fc_shm_header))
    {
        return NULL;
    }

    h = (struct fc_shm_header *) s->config.base;
    seq = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);

    if (s->valid && seq == s->ix.seq) {
        return &s->ix;
    }

    if (seq == s->logged_seq && !s->valid) {
        return NULL;  /* this seq was already found unusable */
    }

    rc = -2;
    pool = NULL;

    for (tries = 0; tries < 3 && rc == -2; tries++) {
        if (pool) {
            ngx_destroy_pool(pool);
        }

        pool = ngx_create_pool(16384, ngx_cycle->log);
        if (pool == NULL) {
            return s->valid ? &s->ix : NULL;
        }

        a.alloc = ngx_http_freqctl_pool_alloc;
        a.ctx = pool;
        rc = fc_l7_build(s->config.base, s->config.size, s->state.base,
                         s->state.size, &ix, &a);
    }

    if (rc != 0) {
        ngx_destroy_pool(pool);
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "freqctl: shm \"%V\" seq %uL unusable (%s): "
                      "requests pass", &mcf->shm_path, seq,
                      rc == -2 ? "kept changing" : ix.why);
        s->logged_seq = seq;
        if (s->pool) {
            ngx_destroy_pool(s->pool);
            s->pool = NULL;
        }
        s->valid = 0;
        return NULL;
    }

    if (ix.skipped && s->logged_seq != ix.seq) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "freqctl: shm \"%V\" seq %uL: %uz invalid items skipped",
                      &mcf->shm_path, ix.seq, ix.skipped);
        s->logged_seq = ix.seq;
    }

    if (s->pool) {
        ngx_destroy_pool(s->pool);
    }

    s->pool = pool;
    s->ix = ix;
    s->valid = 1;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "freqctl: index seq %uL: %uz policies",
                   ix.seq, ix.npolicies);

    return &s->ix;
}


/* Every copy of the uid in r, read from src: the first cap into v, as
 * sent, and into py (may be NULL) whether each is a cookie's Python reading
 * (fc_l7_cookie_find); returns how many there are, and ORs into *enc
 * whether one needs decoding, into *exact whether one is exact (fc_l7.h; a
 * header line is when its name is NAME with '-', in any case, as HTTP reads
 * names). */
static size_t
ngx_http_freqctl_uid_find(ngx_http_request_t *r, ngx_http_freqctl_src_t *src,
    struct fc_l7_str *v, bool *py, size_t cap, bool *enc, bool *exact)
{
    size_t            n, k;
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    if (src->kind == NGX_HTTP_FREQCTL_ARG) {
        return fc_l7_query_find((const char *) r->args.data, r->args.len,
                                (const char *) src->name.data,
                                (const char *) src->raw, src->name.len,
                                v, cap, enc, exact);
    }

    n = 0;

    for (part = &r->headers_in.headers.part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if (h[i].hash == 0) {
                continue;
            }

            k = ngx_min(n, cap);

            if (src->kind == NGX_HTTP_FREQCTL_COOKIE) {
                if (h[i].key.len == sizeof("cookie") - 1
                    && ngx_strncmp(h[i].lowcase_key, "cookie",
                                   sizeof("cookie") - 1) == 0)
                {
                    n += fc_l7_cookie_find((const char *) h[i].value.data,
                                           h[i].value.len,
                                           (const char *) src->name.data,
                                           (const char *) src->raw,
                                           src->name.len, v + k,
                                           py ? py + k : NULL, cap - k, enc,
                                           exact);
                }

            } else if (fc_l7_header_is((const char *) h[i].lowcase_key,
                                       h[i].key.len,
                                       (const char *) src->name.data,
                                       src->name.len))
            {
                if (k < cap) {
                    v[k].data = (const char *) h[i].value.data;
                    v[k].len = h[i].value.len;
                }
                n++;

                /* X_User is no X-User to an application reading headers
                 * by name (Node, Go); nginx drops it unless
                 * underscores_in_headers is on. */
                *exact |= ngx_strncmp(h[i].lowcase_key, src->name.data,
                                      src->name.len) == 0;
            }
        }
    }

    return n;
}


/* A copy of the uid as the application reads it: an argument's
 * percent-decoded with '+' a space, a cookie's percent-decoded (or, py,
 * unquoted as Python does), a header's as sent. */
static ngx_int_t
ngx_http_freqctl_uid_decode(ngx_http_request_t *r, ngx_uint_t kind,
    struct fc_l7_str *v, bool py)
{
    u_char  *d;

    if (kind == NGX_HTTP_FREQCTL_HEADER
        || (!py && memchr(v->data, '%', v->len) == NULL
            && (kind != NGX_HTTP_FREQCTL_ARG
                || memchr(v->data, '+', v->len) == NULL)))
    {
        return NGX_OK;
    }

    d = ngx_pnalloc(r->pool, v->len);
    if (d == NULL) {
        return NGX_ERROR;
    }

    v->len = kind == NGX_HTTP_FREQCTL_ARG
             ? fc_l7_decode(v->data, v->len, (char *) d, v->len)
             : py ? fc_l7_cookie_unquote(v->data, v->len, (char *) d)
             : fc_l7_decode_cookie(v->data, v->len, (char *) d, v->len);
    v->data = (const char *) d;

    return NGX_OK;
}


/*
 * The uid, read from src. Given once (nearly always) it is rq->uid, without
 * allocating; given more than once, every copy goes to rq->uids, in the
 * request's pool, a non-empty one first: the engine decides on all of them.
 */
static ngx_int_t
ngx_http_freqctl_uid_read(ngx_http_request_t *r, ngx_http_freqctl_src_t *src,
    struct fc_l7_index *ix, struct fc_l7_req *rq)
{
    bool               enc, *py;
    size_t             n, i;
    struct fc_l7_str  *v, t;

    /* $arg_NAME, the common case, without a call, nor a look at whether a
     * copy is exact while no allow entry names a uid. */
    enc = false;
    rq->uid_exact = false;
    n = src->kind == NGX_HTTP_FREQCTL_ARG && !fc_l7_allows_uids(ix)
        ? fc_l7_query_find((const char *) r->args.data, r->args.len,
                           (const char *) src->name.data,
                           (const char *) src->raw, src->name.len,
                           &rq->uid, 1, &enc, NULL)
        : ngx_http_freqctl_uid_find(r, src, &rq->uid, NULL, 1, &enc,
                                    &rq->uid_exact);

    if (n <= 1) {
        if (n == 0) {
            rq->uid.len = 0;
            return NGX_OK;
        }

        /* One copy is never a cookie's Python reading: that comes with
         * the other reading of its value. */
        return enc ? ngx_http_freqctl_uid_decode(r, src->kind, &rq->uid, false)
                   : NGX_OK;
    }

    v = ngx_palloc(r->pool, n * sizeof(struct fc_l7_str));
    py = ngx_pcalloc(r->pool, n * sizeof(bool));
    if (v == NULL || py == NULL) {
        return NGX_ERROR;
    }

    enc = false;
    ngx_http_freqctl_uid_find(r, src, v, py, n, &enc, &rq->uid_exact);

    for (i = 0; i < n; i++) {
        if (enc
            && ngx_http_freqctl_uid_decode(r, src->kind, &v[i], py[i])
               != NGX_OK)
        {
            return NGX_ERROR;
        }

        if (v[i].len && v[0].len == 0) {
            t = v[0];
            v[0] = v[i];
            v[i] = t;
        }
    }

    rq->uid = v[0];

    if (rq->uid.len) {
        rq->uids = v;
        rq->nuids = n;
    }

    return NGX_OK;
}


/* The uid for the log: its copies, joined by '", "' when there are several,
 * escaped (at most NGX_HTTP_FREQCTL_UID_LOG bytes of them). */
static ngx_str_t
ngx_http_freqctl_uid_text(ngx_http_request_t *r, struct fc_l7_req *rq)
{
    u_char          *p, *last, c;
    size_t           i, j, n;
    ngx_str_t        s;
    struct fc_l7_str  u;

    ngx_str_set(&s, "");

    p = ngx_pnalloc(r->pool, NGX_HTTP_FREQCTL_UID_LOG);
    if (p == NULL) {
        return s;
    }

    s.data = p;
    last = p + NGX_HTTP_FREQCTL_UID_LOG;
    n = rq->nuids ? rq->nuids : 1;

    /*
     * The uid is the client's bytes, decoded: escaped as nginx escapes
     * variables in access_log, so that no byte of it can end the line or
     * the quotes and write a line of its own into the log.
     */
    for (i = 0; i < n && last - p >= 8; i++) {
        u = rq->nuids ? rq->uids[i] : rq->uid;

        if (i) {
            p = ngx_cpymem(p, "\", \"", 4);
        }

        for (j = 0; j < u.len && last - p >= 8; j++) {
            c = (u_char) u.data[j];

            if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
                p = ngx_sprintf(p, "\\x%02xd", c);

            } else {
                *p++ = c;
            }
        }
    }

    s.len = p - s.data;

    return s;
}


/* Every occurrence of the args (decoded) and headers that some policy
 * names: a value given twice is two values, and a request matches a policy
 * if any of them does. */
static ngx_int_t
ngx_http_freqctl_values(ngx_http_request_t *r, struct fc_l7_index *ix,
    struct fc_l7_req *rq)
{
    size_t             nargs, nhdrs, n;
    u_char            *buf;
    ngx_uint_t         i;
    ngx_list_part_t   *part;
    ngx_table_elt_t   *hdr;
    struct fc_l7_val  *vals;
    int                k;

    rq->vals = NULL;
    rq->nvals = 0;

    nargs = ix->nargs && r->args.len
            ? fc_l7_args_max((const char *) r->args.data, r->args.len) : 0;

    nhdrs = 0;
    if (ix->nheaders) {
        for (part = &r->headers_in.headers.part; part; part = part->next) {
            nhdrs += part->nelts;
        }
    }

    if (nargs + nhdrs == 0) {
        return NGX_OK;
    }

    vals = ngx_palloc(r->pool, (nargs + nhdrs) * sizeof(struct fc_l7_val));
    if (vals == NULL) {
        return NGX_ERROR;
    }

    n = 0;

    if (nargs) {
        buf = ngx_pnalloc(r->pool, r->args.len);
        if (buf == NULL) {
            return NGX_ERROR;
        }

        n = fc_l7_args(ix, (const char *) r->args.data, r->args.len,
                       (char *) buf, vals);
    }

    if (nhdrs) {
        for (part = &r->headers_in.headers.part; part; part = part->next) {
            hdr = part->elts;

            for (i = 0; i < part->nelts; i++) {
                k = fc_l7_header_idx(ix, (const char *) hdr[i].lowcase_key,
                                     hdr[i].key.len);
                if (k < 0) {
                    continue;
                }

                vals[n].kind = FC_DIM_HEADER;
                vals[n].idx = (uint8_t) k;
                vals[n].v.data = (const char *) hdr[i].value.data;
                vals[n].v.len = hdr[i].value.len;
                n++;
            }
        }
    }

    rq->vals = vals;
    rq->nvals = n;

    return NGX_OK;
}


/* Fills the engine's view of r: uid, uri, address, and the args and headers
 * that some policy names. */
static ngx_int_t
ngx_http_freqctl_request(ngx_http_request_t *r, ngx_http_freqctl_loc_conf_t *lcf,
    struct fc_l7_index *ix, struct fc_l7_req *rq)
{
    u_char                     *d;
    ngx_str_t                   v;
    ngx_http_variable_value_t  *vv;

    /* Field by field, not cleared whole (120 bytes): the handler and
     * ngx_http_freqctl_values() set the rest; addr is read only with a
     * family. */
    rq->uid.data = NULL;
    rq->uid.len = 0;
    rq->nuids = 0;
    rq->uid_exact = true;  /* a variable's value, as nginx gives it; else
                              ngx_http_freqctl_uid_read() says */
    rq->family = 0;
    rq->keybuf = NULL;
    rq->keycap = 0;

    if (lcf->uid_src && lcf->uid_src->kind) {
        if (ngx_http_freqctl_uid_read(r, lcf->uid_src, ix, rq) != NGX_OK) {
            return NGX_ERROR;
        }

    } else if (lcf->uid_index != NGX_CONF_UNSET) {
        /* Any other variable, as nginx gives it. */
        vv = ngx_http_get_indexed_variable(r, lcf->uid_index);
        if (vv != NULL && !vv->not_found) {
            rq->uid.data = (const char *) vv->data;
            rq->uid.len = vv->len;
        }

    } else if (lcf->uid) {
        if (ngx_http_complex_value(r, lcf->uid, &v) != NGX_OK) {
            return NGX_ERROR;
        }
        rq->uid.data = (const char *) v.data;
        rq->uid.len = v.len;
    }

    rq->uri.data = (const char *) r->uri.data;
    rq->uri.len = r->uri.len;

    /* /login;jsessionid=1 is /login to a servlet container: uri= policies
     * match the path without its ';' parameters. */
    if (ix->uses_uri && r->uri.len
        && ngx_strlchr(r->uri.data, r->uri.data + r->uri.len, ';'))
    {
        d = ngx_pnalloc(r->pool, r->uri.len);
        if (d == NULL) {
            return NGX_ERROR;
        }
        rq->uri.len = fc_l7_uri_params((const char *) r->uri.data, r->uri.len,
                                       (char *) d);
        rq->uri.data = (const char *) d;
    }

    switch (r->connection->sockaddr->sa_family) {
    case AF_INET:
        rq->family = 4;
        ngx_memcpy(rq->addr,
                   &((struct sockaddr_in *) r->connection->sockaddr)->sin_addr, 4);
        ngx_memzero(rq->addr + 4, 12);
        break;
#if (NGX_HAVE_INET6)
    case AF_INET6:
        rq->family = 6;
        ngx_memcpy(rq->addr,
                   &((struct sockaddr_in6 *) r->connection->sockaddr)->sin6_addr, 16);
        if (IN6_IS_ADDR_V4MAPPED((struct in6_addr *) rq->addr)) {
            rq->family = 4;
            ngx_memmove(rq->addr, rq->addr + 12, 4);
            ngx_memzero(rq->addr + 4, 12);
        }
        break;
#endif
    }

    return ngx_http_freqctl_values(r, ix, rq);
}


static ngx_int_t
ngx_http_freqctl_add_header(ngx_http_request_t *r, const char *name, ngx_str_t *value)
{
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;
    h->key.data = (u_char *) name;
    h->key.len = ngx_strlen(name);
    h->value = *value;

    return NGX_OK;
}


/* Retry-After (whole seconds, never early) and the IETF httpapi draft's
 * RateLimit-Policy / RateLimit for the deciding policy. */
static ngx_int_t
ngx_http_freqctl_headers(ngx_http_request_t *r, struct fc_l7_result *res)
{
    ngx_str_t  v;
    uint64_t   retry, reset;

    retry = (res->retry_ns + FC_NS_PER_SEC - 1) / FC_NS_PER_SEC;
    reset = res->verdict == FC_L7_REJECTED ? retry
            : (res->delay_ns + FC_NS_PER_SEC - 1) / FC_NS_PER_SEC;

    v.data = ngx_pnalloc(r->pool, 3 * (NGX_INT64_LEN + 32));
    if (v.data == NULL) {
        return NGX_ERROR;
    }

    if (res->verdict == FC_L7_REJECTED) {
        v.len = ngx_sprintf(v.data, "%uL", retry) - v.data;
        if (ngx_http_freqctl_add_header(r, "Retry-After", &v) != NGX_OK) {
            return NGX_ERROR;
        }
        v.data += v.len;
    }

    /* A concurrency cap is a quota of requests in flight, with no window
     * and no reset time (the draft's quota unit "concurrent-requests"). */
    if (res->concurrency) {
        v.len = ngx_sprintf(v.data, "\"p%uD\";q=%uL;qu=\"concurrent-requests\"",
                            res->policy, res->limit) - v.data;
    } else {
        v.len = ngx_sprintf(v.data, "\"p%uD\";q=%uL;w=%uL", res->policy,
                            res->limit, res->window_s) - v.data;
    }
    if (ngx_http_freqctl_add_header(r, "RateLimit-Policy", &v) != NGX_OK) {
        return NGX_ERROR;
    }
    v.data += v.len;

    if (res->concurrency) {
        v.len = ngx_sprintf(v.data, "\"p%uD\";r=0", res->policy) - v.data;
    } else {
        v.len = ngx_sprintf(v.data, "\"p%uD\";r=%uL;t=%uL", res->policy,
                            res->remaining, reset) - v.data;
    }

    return ngx_http_freqctl_add_header(r, "RateLimit", &v);
}


/* nginx's cached time: no system call per request. It lags by at most an
 * event loop turn, which can only delay an admission; policies for which a
 * few ms matter read the precise clock in the engine. */
static uint64_t
ngx_http_freqctl_now(void)
{
    ngx_time_t  *tp;

    tp = ngx_timeofday();

    return (uint64_t) tp->sec * FC_NS_PER_SEC + (uint64_t) tp->msec * 1000000;
}


/* The end of a request that holds places, however it ended: they are
 * given back. */
static void
ngx_http_freqctl_cleanup(void *data)
{
    ngx_http_freqctl_ctx_t  *ctx = data;
    ngx_http_freqctl_shm_t  *s = &ngx_http_freqctl_shm;

    if (ctx->nplaces && s->state.base && ctx->state_gen == s->state_gen) {
        fc_l7_give_back(s->state.base, s->state.size, &s->holder, ctx->places,
                        ctx->nplaces, ngx_http_freqctl_now());
    }

    ctx->nplaces = 0;
}


/*
 * The request's ctx. An internal redirect (index, try_files, error_page)
 * clears module contexts and runs the phases again, but keeps the request's
 * variables: the ctx is also kept in the value of a variable of our own
 * (NGX_HTTP_VAR_NOHASH: not found by name at run time), so the request is
 * decided once and $freqctl_status survives the redirect. (A pool cleanup
 * would do, as the realip module's; it costs every request a walk of the
 * cleanups and a call at its end, and only a request holding places needs
 * one.)
 */
static ngx_http_freqctl_ctx_t *
ngx_http_freqctl_get_ctx(ngx_http_request_t *r, ngx_flag_t create)
{
    ngx_http_freqctl_main_conf_t  *mcf;
    ngx_http_variable_value_t     *vv;
    ngx_http_freqctl_ctx_t        *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_freqctl_module);
    if (ctx) {
        return ctx;
    }

    mcf = ngx_http_get_module_main_conf(r, ngx_http_freqctl_module);
    vv = &r->variables[mcf->ctx_index];

    if (vv->data) {
        ctx = (ngx_http_freqctl_ctx_t *) vv->data;
        ngx_http_set_ctx(r, ctx, ngx_http_freqctl_module);
        return ctx;
    }

    if (!create) {
        return NULL;
    }

    ctx = ngx_palloc(r->pool, sizeof(ngx_http_freqctl_ctx_t));
    if (ctx == NULL) {
        return NULL;
    }

    ngx_memzero(ctx, offsetof(ngx_http_freqctl_ctx_t, place));
    vv->data = (u_char *) ctx;
    vv->len = 0;
    vv->valid = 1;
    vv->not_found = 0;
    ngx_http_set_ctx(r, ctx, ngx_http_freqctl_module);

    return ctx;
}


static ngx_int_t
ngx_http_freqctl_handler(ngx_http_request_t *r)
{
    ngx_http_freqctl_main_conf_t  *mcf;
    ngx_http_freqctl_loc_conf_t   *lcf;
    ngx_http_freqctl_ctx_t        *ctx;
    ngx_pool_cleanup_t            *cln;
    ngx_str_t                      uid;
    struct fc_l7_index            *ix;
    struct fc_l7_result            res;
    struct fc_l7_alloc             alloc;
    struct fc_l7_req               rq;

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_freqctl_module);
    mcf = ngx_http_get_module_main_conf(r, ngx_http_freqctl_module);

    if (!lcf->enable || r->main != r) {
        return NGX_DECLINED;
    }

    ctx = ngx_http_freqctl_get_ctx(r, 1);
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (ctx->done) {
        return NGX_DECLINED;  /* back from a delay, or an internal redirect */
    }

    ctx->done = 1;
    ctx->status = NGX_HTTP_FREQCTL_PASSED;

    ix = ngx_http_freqctl_index(r, mcf);
    if (ix == NULL) {
        return NGX_DECLINED;  /* fail open */
    }

    if (ngx_http_freqctl_request(r, lcf, ix, &rq) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    alloc.alloc = ngx_http_freqctl_pool_alloc;
    alloc.ctx = r->pool;
    rq.alloc = &alloc;

    if (ix->has_keys && mcf->key_used) {
        rq.keybuf = ngx_pnalloc(r->pool, NGX_HTTP_FREQCTL_KEY_MAX);
        if (rq.keybuf == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
        rq.keycap = NGX_HTTP_FREQCTL_KEY_MAX;
    }

    rq.holder = &ngx_http_freqctl_shm.holder;
    rq.places = ctx->place;
    rq.places_cap = NGX_HTTP_FREQCTL_PLACES;

    fc_l7_decide(ix, &rq, ngx_http_freqctl_now(), &res);
    ctx->policy = res.policy;
    ctx->key.data = (u_char *) rq.keybuf;
    ctx->key.len = res.key_len;
    /* Given back by the pool's cleanup from now on. */
    ctx->places = res.places;
    ctx->nplaces = res.nplaces;
    ctx->state_gen = ngx_http_freqctl_shm.state_gen;

    if (res.nplaces) {
        cln = ngx_pool_cleanup_add(r->pool, 0);
        if (cln == NULL) {
            ngx_http_freqctl_cleanup(ctx);
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        cln->handler = ngx_http_freqctl_cleanup;
        cln->data = ctx;
    }

    if (ngx_http_freqctl_shm.holder.unrecorded
        && !ngx_http_freqctl_shm.logged_holds)
    {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "freqctl: this worker holds more than %d concurrency "
                      "places: the ones past them are not given back if "
                      "it is killed", FC_SHM_HOLDS);
        ngx_http_freqctl_shm.logged_holds = 1;
    }

    if (res.would_deny) {
        uid = ngx_http_freqctl_uid_text(r, &rq);
        ngx_log_error(lcf->log_level, r->connection->log, 0,
                      "freqctl: %ud log polic%s would have denied this "
                      "request, uid \"%V\"", res.would_deny,
                      res.would_deny == 1 ? "y" : "ies", &uid);
    }

    return ngx_http_freqctl_verdict(r, lcf, ctx, &res, &rq);
}


/* What the decision res makes of the request: logged, its status for
 * $freqctl_status, and the phase's answer. */
static ngx_int_t
ngx_http_freqctl_verdict(ngx_http_request_t *r,
    ngx_http_freqctl_loc_conf_t *lcf, ngx_http_freqctl_ctx_t *ctx,
    struct fc_l7_result *res, struct fc_l7_req *rq)
{
    ngx_str_t  uid;

    switch (res->verdict) {

    case FC_L7_PASS:
        return NGX_DECLINED;

    case FC_L7_ALLOWED:
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "freqctl: allowed, by an allow entry on the %s",
                       res->uid_ban ? "uid" : "client address");
        ctx->status = NGX_HTTP_FREQCTL_ALLOWED;
        return NGX_DECLINED;

    case FC_L7_ERROR:
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "freqctl: no memory for the %ud policies this request "
                      "matches", res->matched);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;

    case FC_L7_BANNED:
        uid = ngx_http_freqctl_uid_text(r, rq);
        ngx_log_error(lcf->log_level, r->connection->log, 0,
                      "freqctl: %s, %s%*s%s", lcf->dry_run ? "would ban" : "banned",
                      res->uid_ban ? "uid \"" : "by a ban on the client address",
                      res->uid_ban ? uid.len : 0, uid.data,
                      res->uid_ban ? "\"" : "");
        if (lcf->dry_run) {
            ctx->status = NGX_HTTP_FREQCTL_BANNED_DRY_RUN;
            return NGX_DECLINED;
        }
        ctx->status = NGX_HTTP_FREQCTL_BANNED;
        return lcf->ban_status;

    case FC_L7_REJECTED:
        uid = ngx_http_freqctl_uid_text(r, rq);
        ngx_log_error(lcf->log_level, r->connection->log, 0,
                      "freqctl: policy %uD %s request, uid \"%V\"", res->policy,
                      lcf->dry_run ? "would reject" : "rejected", &uid);
        if (lcf->dry_run) {
            ctx->status = NGX_HTTP_FREQCTL_REJECTED_DRY_RUN;
            return NGX_DECLINED;
        }
        ctx->status = NGX_HTTP_FREQCTL_REJECTED;
        if (lcf->headers && ngx_http_freqctl_headers(r, res) != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
        return lcf->status;

    default: /* FC_L7_DELAYED */
        return ngx_http_freqctl_wait(r, lcf, ctx, res, rq);
    }
}


/* A delayed request: it waits on a timer, as limit_req's do. */
static ngx_int_t
ngx_http_freqctl_wait(ngx_http_request_t *r, ngx_http_freqctl_loc_conf_t *lcf,
    ngx_http_freqctl_ctx_t *ctx, struct fc_l7_result *res,
    struct fc_l7_req *rq)
{
    ngx_str_t   uid;
    ngx_msec_t  delay;
    ngx_uint_t  level;

    uid = ngx_http_freqctl_uid_text(r, rq);
    delay = (ngx_msec_t) ((res->delay_ns + 999999) / 1000000);
    /* One level below refusals, as limit_req logs its delays. */
    level = lcf->log_level + 1;
    ngx_log_error(level, r->connection->log, 0,
                  "freqctl: policy %uD %s request by %M ms, uid \"%V\"",
                  res->policy, lcf->dry_run ? "would delay" : "delaying",
                  delay, &uid);
    if (lcf->dry_run) {
        ctx->status = NGX_HTTP_FREQCTL_DELAYED_DRY_RUN;
        return NGX_DECLINED;
    }
    ctx->status = NGX_HTTP_FREQCTL_DELAYED;
    if (lcf->headers && ngx_http_freqctl_headers(r, res) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    if (delay == 0) {
        return NGX_DECLINED;
    }
    /* A client that already closed leaves its read event ready and
     * raises no new one: post it, so ngx_http_test_reading sees the
     * close now rather than when the delay ends (nginx's own fix to
     * limit_req's delay, 1.21). */
    if (r->connection->read->ready) {
        ngx_post_event(r->connection->read, &ngx_posted_events);

    } else if (ngx_handle_read_event(r->connection->read, 0) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* Wait on a timer, as limit_req does: never sleep in a worker. */
    r->read_event_handler = ngx_http_test_reading;
    r->write_event_handler = ngx_http_freqctl_delay;
    r->connection->write->delayed = 1;
    ngx_add_timer(r->connection->write, delay);
    return NGX_AGAIN;
}


static void
ngx_http_freqctl_delay(ngx_http_request_t *r)
{
    ngx_event_t  *wev;

    wev = r->connection->write;

    if (wev->delayed) {
        if (ngx_handle_write_event(wev, 0) != NGX_OK) {
            ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        }
        return;
    }

    if (ngx_handle_read_event(r->connection->read, 0) != NGX_OK) {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    r->read_event_handler = ngx_http_block_reading;
    r->write_event_handler = ngx_http_core_run_phases;

    ngx_http_core_run_phases(r);
}


static ngx_int_t
ngx_http_freqctl_status_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_freqctl_ctx_t  *ctx;

    ctx = ngx_http_freqctl_get_ctx(r->main, 0);
    if (ctx == NULL || ctx->status == NGX_HTTP_FREQCTL_NONE) {
        v->not_found = 1;
        return NGX_OK;
    }

    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;
    v->len = ngx_http_freqctl_statuses[ctx->status].len;
    v->data = ngx_http_freqctl_statuses[ctx->status].data;

    return NGX_OK;
}


static ngx_int_t
ngx_http_freqctl_policy_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_freqctl_ctx_t  *ctx;

    ctx = ngx_http_freqctl_get_ctx(r->main, 0);
    if (ctx == NULL || ctx->policy == 0) {
        v->not_found = 1;
        return NGX_OK;
    }

    v->data = ngx_pnalloc(r->pool, NGX_INT32_LEN);
    if (v->data == NULL) {
        return NGX_ERROR;
    }

    v->len = ngx_sprintf(v->data, "%uD", ctx->policy) - v->data;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;

    return NGX_OK;
}


static ngx_int_t
ngx_http_freqctl_key_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_freqctl_ctx_t  *ctx;

    ctx = ngx_http_freqctl_get_ctx(r->main, 0);
    if (ctx == NULL || ctx->key.len == 0) {
        v->not_found = 1;
        return NGX_OK;
    }

    v->data = ctx->key.data;
    v->len = ctx->key.len;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;

    return NGX_OK;
}


/*
 * Set by ngx_http_freqctl_get_ctx(). A configuration that names it reads
 * an empty value, and its reading keeps the ctx (v->data): the value is
 * cacheable, and this handler, run for a read before the ctx is made or
 * after a flush, leaves data as it is.
 */
static ngx_int_t
ngx_http_freqctl_ctx_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    v->len = 0;
    v->valid = v->data != NULL;
    v->no_cacheable = 0;
    v->not_found = v->data == NULL;

    return NGX_OK;
}


static ngx_http_variable_t  ngx_http_freqctl_vars[] = {

    { ngx_string("freqctl_status"), NULL,
      ngx_http_freqctl_status_variable, 0, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("freqctl_policy"), NULL,
      ngx_http_freqctl_policy_variable, 0, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("freqctl_key"), NULL,
      ngx_http_freqctl_key_variable, 0, NGX_HTTP_VAR_NOCACHEABLE, 0 },

      ngx_http_null_variable
};

/* Where a request keeps its ctx (see ngx_http_freqctl_get_ctx()); not for
 * configurations, which read it empty. */
static ngx_str_t  ngx_http_freqctl_ctx_var = ngx_string("freqctl_internal_ctx");


static ngx_int_t
ngx_http_freqctl_add_variables(ngx_conf_t *cf)
{
    ngx_http_freqctl_main_conf_t  *mcf;
    ngx_http_variable_t           *var, *v;

    for (v = ngx_http_freqctl_vars; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = v->get_handler;
        var->data = v->data;
    }

    var = ngx_http_add_variable(cf, &ngx_http_freqctl_ctx_var,
                                NGX_HTTP_VAR_NOHASH);
    if (var == NULL) {
        return NGX_ERROR;
    }

    var->get_handler = ngx_http_freqctl_ctx_variable;

    mcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_freqctl_module);
    mcf->ctx_index = ngx_http_get_variable_index(cf,
                                                 &ngx_http_freqctl_ctx_var);
    if (mcf->ctx_index == NGX_ERROR) {
        return NGX_ERROR;
    }

    return NGX_OK;
}


static void *
ngx_http_freqctl_create_main_conf(ngx_conf_t *cf)
{
    return ngx_pcalloc(cf->pool, sizeof(ngx_http_freqctl_main_conf_t));
}


/* The workers' state file is the config file's path + ".state". */
static char *
ngx_http_freqctl_init_main_conf(ngx_conf_t *cf, void *conf)
{
    ngx_http_freqctl_main_conf_t  *mcf = conf;
    size_t                         len;

    if (mcf->shm_path.len == 0) {
        return NGX_CONF_OK;
    }

    len = mcf->shm_path.len + sizeof(FC_SHM_STATE_SUFFIX);

    mcf->state_path.data = ngx_pnalloc(cf->pool, len);
    if (mcf->state_path.data == NULL) {
        return NGX_CONF_ERROR;
    }

    mcf->state_path.len = ngx_sprintf(mcf->state_path.data, "%V%s%Z",
                                      &mcf->shm_path, FC_SHM_STATE_SUFFIX)
                          - mcf->state_path.data - 1;

    return NGX_CONF_OK;
}


/*
 * freqctl_uid: a complex value, as most directives take; but when it is one
 * variable, its value is read without running the script engine and copying
 * it into the pool for every request; and $cookie_NAME, $arg_NAME and
 * $http_NAME are read by the module itself (ngx_http_freqctl_src_t).
 */
static char *
ngx_http_freqctl_uid(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_freqctl_loc_conf_t   *lcf = conf;
    ngx_str_t                     *value, name;
    size_t                         i;

    if (lcf->uid != NULL || lcf->uid_index != NGX_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;
    name = value[1];

    if (name.len > 3 && name.data[0] == '$' && name.data[1] == '{'
        && name.data[name.len - 1] == '}')
    {
        name.data += 2;
        name.len -= 3;

    } else if (name.len > 1 && name.data[0] == '$') {
        name.data++;
        name.len--;

    } else {
        name.len = 0;
    }

    for (i = 0; i < name.len; i++) {
        u_char  c = ngx_tolower(name.data[i]);

        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) {
            name.len = 0;
            break;
        }
    }

    if (name.len == 0) {
        return ngx_http_set_complex_value_slot(cf, cmd, conf);
    }

    lcf->uid_index = ngx_http_get_variable_index(cf, &name);
    if (lcf->uid_index == NGX_ERROR) {
        return NGX_CONF_ERROR;
    }

    return ngx_http_freqctl_uid_src(cf, lcf, &name);
}


/* The source of freqctl_uid $cookie_NAME, $arg_NAME or $http_NAME (var is
 * the variable's name); none for another variable. */
static char *
ngx_http_freqctl_uid_src(ngx_conf_t *cf, ngx_http_freqctl_loc_conf_t *lcf,
    ngx_str_t *var)
{
    size_t                          i;
    ngx_uint_t                      k;
    ngx_http_freqctl_src_t         *src, **srcp;
    ngx_http_freqctl_main_conf_t   *mcf;
    static const struct {
        ngx_str_t                   prefix;
        ngx_uint_t                  kind;
    } kinds[] = {
        { ngx_string("cookie_"), NGX_HTTP_FREQCTL_COOKIE },
        { ngx_string("arg_"), NGX_HTTP_FREQCTL_ARG },
        { ngx_string("http_"), NGX_HTTP_FREQCTL_HEADER },
    };

    for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        if (var->len > kinds[k].prefix.len
            && ngx_strncasecmp(var->data, kinds[k].prefix.data,
                               kinds[k].prefix.len) == 0)
        {
            break;
        }
    }

    if (k == sizeof(kinds) / sizeof(kinds[0])) {
        return NGX_CONF_OK;
    }

    if (var->len - kinds[k].prefix.len > FC_SHM_MAX_NAME) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "freqctl_uid: \"$%V\": a name of at most %d bytes "
                           "expected after \"%V\"", var, FC_SHM_MAX_NAME,
                           &kinds[k].prefix);
        return NGX_CONF_ERROR;
    }

    src = ngx_pcalloc(cf->pool, sizeof(ngx_http_freqctl_src_t));
    if (src == NULL) {
        return NGX_CONF_ERROR;
    }

    src->kind = kinds[k].kind;
    src->var.len = var->len;
    src->var.data = ngx_pnalloc(cf->pool, var->len);
    if (src->var.data == NULL) {
        return NGX_CONF_ERROR;
    }
    ngx_strlow(src->var.data, var->data, var->len);

    /* NAME as written: nginx makes $cookie_UID $cookie_uid, but the
     * application behind it reads one of them, and the directive says
     * which. */
    src->raw = ngx_pnalloc(cf->pool, var->len - kinds[k].prefix.len);
    if (src->raw == NULL) {
        return NGX_CONF_ERROR;
    }
    ngx_memcpy(src->raw, var->data + kinds[k].prefix.len,
               var->len - kinds[k].prefix.len);

    /* NAME as the engine matches it: a header's with '-' for '_', as
     * $http_NAME reads X-User; another's canonical (fc_l7_name_canon). */
    src->name.len = var->len - kinds[k].prefix.len;
    src->name.data = src->var.data + kinds[k].prefix.len;
    if (src->kind == NGX_HTTP_FREQCTL_HEADER) {
        src->name.data = ngx_pnalloc(cf->pool, src->name.len);
        if (src->name.data == NULL) {
            return NGX_CONF_ERROR;
        }
        for (i = 0; i < src->name.len; i++) {
            src->name.data[i] = src->var.data[kinds[k].prefix.len + i] == '_'
                                ? '-' : src->var.data[kinds[k].prefix.len + i];
        }
    }

    mcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_freqctl_module);

    if (mcf->uid_srcs.elts == NULL
        && ngx_array_init(&mcf->uid_srcs, cf->pool, 2,
                          sizeof(ngx_http_freqctl_src_t *)) != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    srcp = ngx_array_push(&mcf->uid_srcs);
    if (srcp == NULL) {
        return NGX_CONF_ERROR;
    }

    *srcp = src;
    lcf->uid_src = src;

    return NGX_CONF_OK;
}


static void *
ngx_http_freqctl_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_freqctl_loc_conf_t  *conf;

    conf = ngx_pcalloc(cf->pool, sizeof(ngx_http_freqctl_loc_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     conf->uid = NULL;
     */

    conf->enable = NGX_CONF_UNSET;
    conf->uid_index = NGX_CONF_UNSET;
    conf->status = NGX_CONF_UNSET_UINT;
    conf->ban_status = NGX_CONF_UNSET_UINT;
    conf->dry_run = NGX_CONF_UNSET;
    conf->log_level = NGX_CONF_UNSET_UINT;
    conf->headers = NGX_CONF_UNSET;

    return conf;
}


static char *
ngx_http_freqctl_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_freqctl_loc_conf_t   *prev = parent;
    ngx_http_freqctl_loc_conf_t   *conf = child;
    ngx_http_freqctl_main_conf_t  *mcf;

    ngx_conf_merge_value(conf->enable, prev->enable, 0);
    ngx_conf_merge_uint_value(conf->status, prev->status, NGX_HTTP_TOO_MANY_REQUESTS);
    ngx_conf_merge_uint_value(conf->ban_status, prev->ban_status, NGX_HTTP_FORBIDDEN);
    ngx_conf_merge_value(conf->dry_run, prev->dry_run, 0);
    /* As limit_req_log_level: refusals at error, which Debian's error_log
     * shows, delays one level lower. */
    ngx_conf_merge_uint_value(conf->log_level, prev->log_level, NGX_LOG_ERR);
    ngx_conf_merge_value(conf->headers, prev->headers, 1);

    if (conf->uid == NULL && conf->uid_index == NGX_CONF_UNSET) {
        conf->uid = prev->uid;
        conf->uid_index = prev->uid_index;
        conf->uid_src = prev->uid_src;
    }

    mcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_freqctl_module);

    if (conf->enable && mcf->shm_path.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"freqctl on\" needs \"freqctl_shm\" in the http block");
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_freqctl_init(ngx_conf_t *cf)
{
    ngx_uint_t                     i, k;
    ngx_hash_key_t                *key;
    ngx_http_variable_t           *v;
    ngx_http_handler_pt           *h;
    ngx_http_freqctl_src_t       **src;
    ngx_http_core_main_conf_t     *cmcf;
    ngx_http_freqctl_main_conf_t  *mcf;

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_PREACCESS_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_freqctl_handler;

    /* The deciding key is written out for $freqctl_key only where the
     * configuration names it (log_format, add_header, map, ...): every use
     * there indexes the variable by now. */
    mcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_freqctl_module);
    v = cmcf->variables.elts;
    for (i = 0; i < cmcf->variables.nelts; i++) {
        if (v[i].name.len == sizeof("freqctl_key") - 1
            && ngx_strncmp(v[i].name.data, "freqctl_key", v[i].name.len) == 0)
        {
            mcf->key_used = 1;
        }
    }

    /* A variable the configuration adds (set, map) goes before nginx's
     * prefix ones when the indexes are resolved, right after this. */
    src = mcf->uid_srcs.elts;
    key = cmcf->variables_keys->keys.elts;
    for (i = 0; i < mcf->uid_srcs.nelts; i++) {
        for (k = 0; k < cmcf->variables_keys->keys.nelts; k++) {
            if (key[k].key.len == src[i]->var.len
                && ngx_strncmp(key[k].key.data, src[i]->var.data,
                               src[i]->var.len) == 0)
            {
                src[i]->kind = 0;
            }
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_freqctl_init_process(ngx_cycle_t *cycle)
{
    ngx_http_freqctl_shm_t        *s = &ngx_http_freqctl_shm;
    ngx_http_freqctl_main_conf_t  *mcf;

    mcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_freqctl_module);
    if (mcf == NULL || mcf->shm_path.len == 0
        || (ngx_process != NGX_PROCESS_WORKER
            && ngx_process != NGX_PROCESS_SINGLE))
    {
        return NGX_OK;
    }

    s->self = fc_l7_worker_id((int) ngx_pid);
    if (s->self == 0) {
        ngx_log_error(NGX_LOG_WARN, cycle->log, 0,
                      "freqctl: no start time of this worker in /proc: its "
                      "concurrency places are not given back if it is "
                      "killed");
    }

    s->free = ngx_alloc(FC_SHM_HOLDS * sizeof(uint32_t), cycle->log);
    if (s->free == NULL) {
        return NGX_ERROR;
    }

    /* Now, not at the first request: a worker that replaces a killed one
     * gives back the places that one held at once. */
    s->checked = ngx_current_msec;
    ngx_http_freqctl_map(s, mcf, cycle->log);

    return NGX_OK;
}


static void
ngx_http_freqctl_exit_process(ngx_cycle_t *cycle)
{
    ngx_http_freqctl_unmap(&ngx_http_freqctl_shm);
}
