# bench/servers.gp - plots of servers.sh's results (gnuplot -e "dir='bench/results'").
set datafile separator ','
set terminal pngcairo size 1100,800 font 'sans,10'

set output dir.'/servers.png'
set multiplot layout 2,1 title 'bench/servers.sh: 64-byte request/reply on loopback (medians)'
set style fill solid 0.6 border -1
set boxwidth 0.7
set grid ytics
set xtics rotate by -35 noenhanced
set key off
set ylabel 'requests/s'
set yrange [0:*]
plot dir.'/servers.csv' every ::1 using 0:3:xtic(1) with boxes lc rgb '#3a6ea5'
set ylabel 'server CPU us per request'
plot dir.'/servers.csv' every ::1 using 0:9:xtic(1) with boxes lc rgb '#c0504d'
unset multiplot

set output dir.'/scaling.png'
set title 'server CPU per request as connections grow'
set xtics norotate
set logscale x
set xlabel 'client connections'
set ylabel 'server CPU us per request'
set key bottom right noenhanced
servers = system("awk -F, 'NR > 1 && !seen[$1]++ { printf \"%s \", $1 }' ".dir."/scaling.csv")
plot for [s in servers] dir.'/scaling.csv' every ::1 \
    using (strcol(1) eq s ? $2 : NaN):3 with linespoints title s
