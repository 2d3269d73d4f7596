import re,glob,sys
names_i=set(); names_v=set()
for f in sorted(glob.glob(sys.argv[1]+'/src/ops/ops_*.def')):
    for m in re.finditer(r'^PD_OP\((\w+),\s*\w+,\s*-?\d+,\s*-?\d+,\s*[^,]+,\s*(\w+),\s*(\w+)\)', open(f).read(), re.M):
        names_i.add(m.group(2)); names_v.add(m.group(3))
fams=re.findall(r'PDI_FAMILY\((\w+)\)', open(sys.argv[1]+'/src/kernels/families.def').read())
out=['/* TEMPORARY weak stubs so that families build independently; removed when every family is implemented. */','#include "core/internal.h"']
for n in sorted(names_i):
    out.append(f'__attribute__((weak)) int {n}(struct pdi_call *c) {{ return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }}')
for n in sorted(names_v):
    out.append(f'__attribute__((weak)) int {n}(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) {{ (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }}')
for f in fams:
    out.append(f'__attribute__((weak)) void pdi_register_{f}(void) {{}}')
open(sys.argv[2],'w').write('\n'.join(out)+'\n')
