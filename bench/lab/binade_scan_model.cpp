// Host model of a binade scan of the bfloat16 chain (tried in session 28, see bench/NOTES.md):
// inside one binade a bfloat16 total is n * g and each step adds an integer (ties: the even
// neighbour, whose corrections depend only on the previous tie's parity), so 256 steps are one
// prefix sum; a step that may leave the binade stops the run. Emulates one warp's lanes, checks
// the total after every chunk against the one-after-another chain, and prints the scans and
// one-after-another steps a chunk with a cost model. Exact, and on the device no faster than the
// plain chain (each scan ~1000 cycles on one warp): kept as the record of that measurement.
// Build: g++ -O2 -o model bench/lab/binade_scan_model.cpp; run: ./model COUNT KIND [SEED]
// (KIND 0 N(0, 0.01), 1 cubes, 2 alternating, 3 random bits, 4 halfway values, 5 drifting
// mean, 6 mixed scales, 7 a total held at a power of two).
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <random>
#include <vector>
typedef uint16_t u16;
static float b2f(u16 h){uint32_t u=(uint32_t)h<<16; float f; memcpy(&f,&u,4); return f;}
static uint32_t fb(float f){uint32_t u; memcpy(&u,&f,4); return u;}
static float bf(uint32_t u){float f; memcpy(&f,&u,4); return f;}
static int fi(float f){int u; memcpy(&u,&f,4); return u;}
static u16 f2b(float x){uint32_t u=fb(x); if((u&0x7fffffff)>0x7f800000) return 0x7fc0; return (u16)((u+0x7fff+((u>>16)&1))>>16);}
static u16 add(u16 a,u16 b){return f2b(b2f(a)+b2f(b));}
long scans=0,seqs=0;
unsigned run(const float* terms, unsigned i, unsigned to, u16& total){
  unsigned ex=(total>>7)&0xff; if(ex<27||ex>247) return i; scans++;
  float scale=bf((261u-ex)<<23), gap=bf((ex-7u)<<23);
  int n0=(int)(b2f(total)*scale); int sign=n0<0?-1:1; const float magic=12582912.0f;
  int k[256]; unsigned ties[32]={0},wild[32]={0},kodd[32]={0};
  for(unsigned l=0;l<32;l++) for(unsigned j=0;j<8;j++){unsigned idx=l*8+j; bool active=idx>=i&&idx<to;
    volatile float q=terms[idx]*scale; bool near=fabsf(q)<1024.0f; volatile float fq=q+magic; int r=fi(fq)-fi(magic);
    volatile float t1=fq-magic; float d=q-t1; bool tie=fabsf(d)==0.5f;
    k[idx]=active&&near? r-((tie&&d<0)?1:0):0; ties[l]|=(active&&near&&tie?1u:0u)<<j; wild[l]|=(active&&!near?1u:0u)<<j; kodd[l]|=(unsigned)(k[idx]&1)<<j;}
  unsigned lane_odd[32]; unsigned bal=0; for(int l=0;l<32;l++){lane_odd[l]=__builtin_popcount(kodd[l])&1; bal|=lane_odd[l]<<l;}
  unsigned last_p[32],p_at[32]; unsigned tb=0;
  for(int l=0;l<32;l++){unsigned below=(1u<<l)-1; unsigned parity=((unsigned)n0^__builtin_popcount(bal&below))&1; last_p[l]=0;p_at[l]=0;
    for(int j=0;j<8;j++){unsigned p=parity^((kodd[l]>>j)&1); if((ties[l]>>j)&1) last_p[l]=p; p_at[l]|=p<<j; parity=p;} if(ties[l]) tb|=1u<<l;}
  int sum[256]; int acc[32];
  for(int l=0;l<32;l++){unsigned below=(1u<<l)-1; unsigned tl=tb&below; unsigned prev= tl? last_p[31-__builtin_clz(tl)]:0; int a=0;
    for(int j=0;j<8;j++){unsigned p=(p_at[l]>>j)&1; int c=0; if((ties[l]>>j)&1){c=(int)(p^prev); prev=p;} a+=k[l*8+j]+c; sum[l*8+j]=a;} acc[l]=a;}
  int incl[32]; int run=0; for(int l=0;l<32;l++){run+=acc[l]; incl[l]=run;}
  unsigned stopped=0; unsigned bad[32]; int start[32];
  for(int l=0;l<32;l++){start[l]=n0+incl[l]-acc[l]; bad[l]=wild[l]; for(int j=0;j<8;j++){unsigned idx=l*8+j; int mag=sign*(start[l]+sum[idx]); if(idx>=i&&idx<to&&(mag<129||mag>255)) bad[l]|=1u<<j;} if(bad[l]) stopped|=1u<<l;}
  if(!stopped){int ne=n0+incl[31]; total=(u16)(fb((float)ne*gap)>>16); return to;}
  unsigned w=__builtin_ctz(stopped); unsigned first=__builtin_ctz(bad[w]); int before= first? start[w]+sum[w*8+first-1] : start[w];
  total=(u16)(fb((float)before*gap)>>16); return w*8+first;
}
u16 chunk(u16 T,const u16* v,unsigned from,unsigned to){
  float terms[256]; for(int j=0;j<256;j++) terms[j]= j<(int)to? b2f(v[j]):0.0f;
  unsigned i=from; while(i<to){unsigned stop=run(terms,i,to,T); if(stop>=to)break; unsigned end= stop-i<32? to : (stop+32<to?stop+32:to); for(unsigned j=stop;j<end;j++){T=add(T,v[j]);seqs++;} i=end;} return T;}
int main(int argc,char**argv){
  long N=atol(argv[1]); int kind=atoi(argv[2]); int seed=argc>3?atoi(argv[3]):1;
  std::mt19937_64 g(seed); std::normal_distribution<float> nd(0,0.01f); std::uniform_int_distribution<int> ui(0,65535);
  std::vector<u16> v(N);
  for(long i=0;i<N;i++){ float x; switch(kind){
      case 0: x=nd(g); break; case 1: { float z=nd(g)*100; x=z*z*z; break;} case 2: x=(i&1)?0.75f:-0.75f; break;
      case 3: { v[i]=(u16)ui(g); continue; } case 4: { int k=ui(g)%511-255; x=ldexpf((float)k, -(ui(g)%20)); break;}
      case 5: x=nd(g)+ (i%100000<50000?0.003f:-0.003f); break; case 7: { x = (ui(g)%4==0? 0.0078125f: -0.0078125f)*(1+(ui(g)%3)); if(i==0) x=2.0f; break;}
      default: x=nd(g)*(float)(1<<(ui(g)%12)); }
    v[i]=f2b(x);}
  u16 t=v[0]; u16 T=v[0]; long bad=0;
  for(long base=0;base<N;base+=256){unsigned W=N-base<256?(unsigned)(N-base):256; T=chunk(T,&v[base],base==0?1:0,W);
    for(long i=(base==0?1:base);i<base+W;i++) t=add(t,v[i]); if(T!=t && !(b2f(T)!=b2f(T)&&b2f(t)!=b2f(t))) bad++;}
  long c=N/256; printf("kind %d: %s bad chunks %ld | scans/chunk %.2f seq/chunk %.1f model %.2f cycles a value (a scan 1000, a step 6.5, a chunk 150: session 28)\n",kind, bad?"MISMATCH":"ok",bad,(double)scans/c,(double)seqs/c,(scans*1000.0+seqs*6.5+c*150.0)/N);
}
