/* paddle.c — the thread-local error (sqlite style: status + message kept
 * where the caller can ask for it). Library code never prints.
 * pdi_error_prefix / pdi_error_append add context to a message set deeper
 * down (the op's debug name, the forward call site of a GradNode). */
#include <stdio.h>
#include <string.h>

#include "core/internal.h"

static _Thread_local char err_msg[2048]; /* room for anomaly reports */
static _Thread_local int err_status;

const char *pd_last_error(void) { return err_msg[0] ? err_msg : "no error"; }
int pd_last_status(void) { return err_status; }
void pd_clear_error(void) { err_msg[0] = 0; err_status = 0; }

static void set(int status, const char *fmt, va_list ap)
{
    err_status = status;
    vsnprintf(err_msg, sizeof err_msg, fmt, ap);
}

void *pdi_error(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set(status, fmt, ap);
    va_end(ap);
    return NULL;
}

int pdi_errorf(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set(status, fmt, ap);
    va_end(ap);
    return status;
}

int pdi_status_of(const void *result, const char *what)
{
    if (result) return PD_OK;
    if (err_status) return err_status;
    return pdi_errorf(PD_ERR_STATE, "%s: failed without an error message (internal error)", what ? what : "call");
}

int pdi_null_tensor(const char *what)
{
    if (err_status) return PD_ERR_NULL;
    return pdi_errorf(PD_ERR_NULL, "%s: NULL tensor", what);
}

void pdi_error_append(const char *fmt, ...)
{
    size_t k = strlen(err_msg);
    if (k + 2 >= sizeof err_msg) return;
    err_msg[k++] = ' ';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err_msg + k, sizeof err_msg - k, fmt, ap);
    va_end(ap);
}

void pdi_error_prefix(const char *prefix)
{
    size_t p = strlen(prefix), k = strlen(err_msg);
    if (!p || (strncmp(err_msg, prefix, p) == 0 && err_msg[p] == ':')) return;
    if (p + 2 >= sizeof err_msg) return;
    if (k + p + 2 >= sizeof err_msg) k = sizeof err_msg - p - 3; /* drop the tail */
    memmove(err_msg + p + 2, err_msg, k);
    err_msg[p + 2 + k] = 0;
    memcpy(err_msg, prefix, p);
    err_msg[p] = ':';
    err_msg[p + 1] = ' ';
}

const char *pdi_shape_str(const int64_t *shape, int ndim, char *buf, size_t n)
{
    size_t k = 0;
    k += (size_t)snprintf(buf + k, n - k, "[");
    for (int i = 0; i < ndim && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (k < n) snprintf(buf + k, n - k, "]");
    return buf;
}
